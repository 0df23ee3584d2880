import { fetchWithDeadline, type HttpAnswer, HttpTimeoutError } from '../http';
import {
  type AnalysisOutcome,
  AnalyzeOperationSchema,
  analyzePath,
  analyzeResultPath,
  API_VERSION,
  type CheckedAnalyzeOperation,
  CurrencyFieldSchema,
  DateFieldSchema,
  ErrorBodySchema,
  type ExtractedInvoice,
  ExtractionError,
  INVOICE_DOC_TYPES,
  INVOICE_MODEL_ID,
  type InvoiceExtractionClient,
  isCalendarDate,
  MAX_DETAIL_CHARS,
  MINOR_UNIT_EXPONENTS,
  OPERATION_LOCATION_HEADER,
  RESULT_ID,
  RETRY_AFTER_HEADER,
  StringFieldSchema,
  toMinorUnits,
} from './protocol';

export interface ExtractionClientOptions {
  /** Azure AI Document Intelligence's endpoint, e.g. https://<resource>.cognitiveservices.azure.com (the simulator's in testing). */
  endpoint: string;
  apiKey: string;
  timeoutMs?: number;
}

/** The longest wait a Retry-After may ask of us. */
const MAX_RETRY_AFTER_MS = 60_000;

/** A Retry-After header (delta-seconds, or an HTTP date) in milliseconds, bounded; undefined when absent or unreadable. */
function retryAfterMs(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - Date.now();
  }
  return Math.round(Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)));
}

/** The socket's error code, from fetch's `cause` (an AggregateError's first, for dual-stack hosts). */
function networkCode(error: unknown): string | undefined {
  const err = error as { code?: string; cause?: { code?: string; errors?: { code?: string }[] } };
  const found = err.cause?.code ?? err.cause?.errors?.[0]?.code ?? err.code;
  return typeof found === 'string' && /^[A-Z0-9_]{1,40}$/.test(found) ? found : undefined;
}

/** Printable, single-line, bounded: what of the provider's text may reach a message. */
const printable = (value: string, max = 300) =>
  Array.from(value, (c) => {
    const n = c.codePointAt(0)!;
    return n < 0x20 || (n >= 0x7f && n <= 0x9f) ? ' ' : c;
  })
    .join('')
    .replace(/ {2,}/g, ' ')
    .trim()
    .slice(0, max);

/** An error code as the provider gave it, when it looks like one. */
const safeCode = (value: string | undefined) =>
  value !== undefined && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : undefined;

/**
 * Removes secrets from a message: the key, the document URL (a presigned URL: a bearer
 * credential), as it is, decoded, JSON-escaped, its query string and each of its query values on
 * its own. Longest first, so the URL goes whole before its parts.
 */
function redactor(apiKey: string, documentUrl?: string): (message: string) => string {
  const secrets = [apiKey];
  if (documentUrl) {
    secrets.push(documentUrl);
    try {
      secrets.push(decodeURI(documentUrl));
    } catch {
      // not decodable: the raw form is enough
    }
    try {
      const url = new URL(documentUrl);
      secrets.push(url.href, url.search, url.search.slice(1));
      for (const [name, value] of url.searchParams) {
        secrets.push(value, encodeURIComponent(value), `${name}=${value}`);
      }
    } catch {
      // not a URL: refused before any request
    }
  }
  const all = [...new Set([...secrets, ...secrets.map((s) => JSON.stringify(s).slice(1, -1))])]
    .filter((s) => s.length >= 6)
    .sort((a, b) => b.length - a.length);
  return (message) => all.reduce((m, secret) => m.split(secret).join('[redacted]'), message).slice(0, 500);
}

/** Azure's error object from a body, when it is one: its code (the inner one when present) and message. */
function azureError(text: string): { code?: string; message?: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  const parsed = ErrorBodySchema.safeParse(body);
  if (!parsed.success) return {};
  const { error } = parsed.data;
  return {
    code: safeCode(error.innererror?.code) ?? safeCode(error.code),
    message: error.innererror?.message ?? error.message,
  };
}

/** What a failed analysis, or a refused document, means for a merchant (Azure's codes, see the error guide). */
function reasonFor(code: string | undefined): string {
  switch (code) {
    case 'InvalidContent':
      return 'The document could not be read: its file is corrupted or its format is not supported (PDF, JPEG, PNG, BMP, TIFF or HEIF).';
    case 'UnsupportedContent':
      return 'The document could not be read: its content is not supported.';
    case 'InvalidContentDimensions':
      return 'The document could not be read: its image is too small or too large.';
    case 'InvalidContentLength':
      return 'The document is too large to be analysed.';
    case 'ContentSourceNotAccessible':
    case 'ContentSourceTimeout':
      return 'The extraction provider could not fetch the document.';
    case 'Canceled':
      return 'The analysis of the document was canceled.';
    default:
      return `The extraction provider could not analyse the document${code ? ` (${code})` : ''}.`;
  }
}

/** A string detail as Postgres jsonb takes it: no NUL, no lone surrogate, at most MAX_DETAIL_CHARS characters; undefined when nothing is left. */
function detailText(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const withoutNul = value.split(String.fromCharCode(0)).join('');
  const wellFormed = (withoutNul as string & { toWellFormed(): string }).toWellFormed();
  const chars = Array.from(printable(wellFormed, Number.MAX_SAFE_INTEGER));
  const kept = chars.slice(0, MAX_DETAIL_CHARS).join('');
  return kept.length > 0 ? kept : undefined;
}

const failed = (code: string, reason: string): AnalysisOutcome => ({ status: 'failed', code, reason });

/** A succeeded analysis as our invoice, or the reason it gives nothing usable. */
export function invoiceOf(operation: CheckedAnalyzeOperation): AnalysisOutcome {
  const documents = operation.analyzeResult?.documents;
  if (!operation.analyzeResult) return failed('UnusableNoResult', 'The extraction provider returned no analysis.');
  const document = documents?.find((d) => INVOICE_DOC_TYPES.includes(d.docType));
  const fields = document?.fields ?? {};
  if (!document || Object.keys(fields).length === 0)
    return failed(
      'UnusableNoInvoice',
      'The document does not look like an invoice: nothing an invoice carries was found.',
    );

  const currencyField = (name: string) => {
    const parsed = CurrencyFieldSchema.safeParse(fields[name]);
    return parsed.success ? parsed.data.valueCurrency : undefined;
  };
  const dateField = (name: string) => {
    const parsed = DateFieldSchema.safeParse(fields[name]);
    return parsed.success && isCalendarDate(parsed.data.valueDate) ? parsed.data.valueDate : undefined;
  };
  const stringField = (name: string) => {
    const parsed = StringFieldSchema.safeParse(fields[name]);
    return parsed.success ? detailText(parsed.data.valueString ?? parsed.data.content) : undefined;
  };

  const total = currencyField('InvoiceTotal');
  if (!total) return failed('UnusableNoTotal', 'No invoice total was found on the document.');
  // The resolved ISO 4217 code; a symbol only when it is itself a code we take ("KES", not "$").
  const named = [total.currencyCode, total.currencySymbol]
    .map((c) => c?.trim().toUpperCase())
    .find((c) => c !== undefined && /^[A-Z]{3}$/.test(c));
  if (!named) return failed('UnusableCurrency', 'The invoice total has no currency we could identify.');
  const exponent = MINOR_UNIT_EXPONENTS[named];
  if (exponent === undefined)
    return failed('UnusableCurrency', `The invoice's currency (${named}) is not one we accept.`);
  const amount = toMinorUnits(total.amount, exponent);
  if (!amount.ok) return failed('UnusableAmount', `The invoice total in ${named} ${amount.problem}.`);

  const issuedDate = dateField('InvoiceDate');
  if (!issuedDate) return failed('UnusableIssueDate', 'No issue date was found on the invoice.');
  const dueDate = dateField('DueDate');
  if (!dueDate) return failed('UnusableDueDate', 'No due date was found on the invoice.');
  if (dueDate < issuedDate)
    return failed('UnusableDates', `The invoice's due date (${dueDate}) is before its issue date (${issuedDate}).`);

  const details: ExtractedInvoice['details'] = {};
  const put = (key: string, value: string | number | undefined) => {
    if (value !== undefined) details[key] = value;
  };
  put('invoice_id', stringField('InvoiceId'));
  put('vendor_name', stringField('VendorName'));
  put('customer_name', stringField('CustomerName'));
  // Other amounts only in the total's currency (a mixed invoice says nothing we can add up).
  for (const [field, key] of [
    ['AmountDue', 'amount_due_minor_units'],
    ['SubTotal', 'sub_total_minor_units'],
    ['TotalTax', 'total_tax_minor_units'],
  ] as const) {
    const value = currencyField(field);
    const currency = (value?.currencyCode ?? named).trim().toUpperCase();
    const minor = value && currency === named ? toMinorUnits(value.amount, exponent) : undefined;
    if (minor?.ok) put(key, minor.minorUnits);
  }
  if (document.confidence !== undefined) put('confidence', Math.round(document.confidence * 1000) / 1000);
  return {
    status: 'succeeded',
    invoice: { amountMinorUnits: amount.minorUnits, currency: named, issuedDate, dueDate, details },
  };
}

/**
 * The invoice-extraction client (Azure AI Document Intelligence, prebuilt-invoice, REST API
 * 2024-11-30; see protocol.ts). Both calls read headers (Operation-Location, Retry-After), so they
 * go through fetchWithDeadline with a fetch that keeps the response's headers. Nothing Azure sends
 * is used unchecked: bodies through zod, the result id through RESULT_ID, Operation-Location
 * against the configured endpoint. The key and the document URL never reach an error message.
 */
export function createExtractionClient(options: ExtractionClientOptions): InvoiceExtractionClient {
  const endpoint = new URL(options.endpoint);
  if (!/^https?:$/.test(endpoint.protocol) || endpoint.search || endpoint.hash || endpoint.username)
    throw new Error('The extraction endpoint must be an http(s) URL without a query, fragment or credentials');
  const base = `${endpoint.origin}${endpoint.pathname.replace(/\/+$/, '')}`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const query = `?api-version=${API_VERSION}`;

  /** One exchange: the answer and its headers, or ExtractionError for no answer (transient). */
  async function exchange(url: string, init: RequestInit): Promise<{ answer: HttpAnswer; headers?: Headers }> {
    let headers: Headers | undefined;
    try {
      const answer = await fetchWithDeadline(
        url,
        {
          ...init,
          headers: { 'Ocp-Apim-Subscription-Key': options.apiKey, Accept: 'application/json', ...init.headers },
        },
        timeoutMs,
        async (input, requestInit) => {
          const response = await fetch(input, requestInit);
          headers = response.headers;
          return response;
        },
      );
      return { answer, headers };
    } catch (error) {
      const timedOut =
        error instanceof HttpTimeoutError ||
        (error as Error)?.name === 'TimeoutError' ||
        (error as Error)?.name === 'AbortError';
      throw new ExtractionError(
        timedOut
          ? `The extraction provider did not answer within ${timeoutMs} ms.`
          : `The extraction provider is unreachable (${networkCode(error) ?? 'network error'}).`,
        { transient: true },
      );
    }
  }

  /** A refusal or failure of the provider as ExtractionError: transient for 429, 408 and 5xx. */
  async function refusal(
    answer: HttpAnswer,
    headers: Headers | undefined,
    lead: (status: number, code: string | undefined) => string,
    redact: (message: string) => string,
  ): Promise<ExtractionError> {
    const status = answer.status;
    const { code, message } = azureError(await answer.text());
    const transient = status === 429 || status === 408 || status >= 500;
    const wait = status === 429 || status === 503 ? retryAfterMs(headers?.get(RETRY_AFTER_HEADER)) : undefined;
    // Redacted whole, then bounded: cutting first could leave part of a secret behind.
    const said = message ? `: ${printable(message, 10_000)}` : '';
    return new ExtractionError(redact(`${lead(status, code)} (HTTP ${status}${code ? ` ${code}` : ''}${said})`), {
      httpStatus: status,
      ...(code && { code }),
      transient,
      ...(wait !== undefined && { retryAfterMs: wait }),
    });
  }

  /** What a status says whichever the call. */
  const commonLead = (status: number): string | undefined => {
    if (status === 401) return 'The extraction provider refused our key';
    if (status === 403) return 'The extraction provider refused the request';
    if (status === 429) return 'The extraction provider is limiting our request rate';
    if (status >= 500) return 'The extraction provider failed';
    return undefined;
  };

  /** The result id an Operation-Location names, if it points at our endpoint's prebuilt-invoice analyzeResults. */
  function resultIdOf(location: string | null | undefined): string | undefined {
    if (!location) return undefined;
    let url: URL;
    try {
      url = new URL(location);
    } catch {
      return undefined;
    }
    if (url.origin !== endpoint.origin || url.username || url.password) return undefined;
    const prefix = `${base.slice(endpoint.origin.length)}${analyzeResultPath(INVOICE_MODEL_ID, '')}`;
    if (!url.pathname.startsWith(prefix)) return undefined;
    const id = url.pathname.slice(prefix.length);
    return RESULT_ID.test(id) ? id : undefined;
  }

  return {
    async analyze({ documentUrl }) {
      const redact = redactor(options.apiKey, documentUrl);
      let source: URL | undefined;
      try {
        source = new URL(documentUrl);
      } catch {
        source = undefined;
      }
      if (!source || !/^https?:$/.test(source.protocol))
        throw new ExtractionError('The document URL is not an absolute http(s) URL.', { transient: false });
      const { answer, headers } = await exchange(`${base}${analyzePath(INVOICE_MODEL_ID)}${query}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ urlSource: documentUrl }),
      });
      if (answer.status === 202) {
        const resultId = resultIdOf(headers?.get(OPERATION_LOCATION_HEADER));
        if (!resultId)
          throw new ExtractionError(
            'The extraction provider accepted the document without an Operation-Location naming a prebuilt-invoice result at our endpoint.',
            { httpStatus: 202, transient: false },
          );
        return { resultId };
      }
      throw await refusal(
        answer,
        headers,
        (status, code) =>
          commonLead(status) ??
          (status === 404
            ? 'The extraction provider does not serve the prebuilt-invoice model at this endpoint and API version'
            : status === 400
              ? reasonFor(code).replace(/\.$/, '')
              : 'The extraction provider refused the document'),
        redact,
      );
    },

    async result(resultId) {
      const redact = redactor(options.apiKey);
      if (typeof resultId !== 'string' || !RESULT_ID.test(resultId))
        throw new ExtractionError('The analysis result id is malformed.', { transient: false });
      const { answer, headers } = await exchange(`${base}${analyzeResultPath(INVOICE_MODEL_ID, resultId)}${query}`, {
        method: 'GET',
      });
      if (answer.status !== 200)
        throw await refusal(
          answer,
          headers,
          (status) =>
            commonLead(status) ??
            (status === 404
              ? 'The extraction provider does not know the analysis: its id is unknown or it expired'
              : 'The extraction provider refused to read the analysis'),
          redact,
        );
      let body: unknown;
      try {
        body = await answer.json();
      } catch {
        body = undefined;
      }
      const parsed = AnalyzeOperationSchema.safeParse(body);
      if (!parsed.success)
        throw new ExtractionError('The extraction provider answered the analysis with a body we cannot read.', {
          httpStatus: 200,
          transient: false,
        });
      const operation = parsed.data;
      switch (operation.status) {
        case 'notStarted':
        case 'running': {
          const wait = retryAfterMs(headers?.get(RETRY_AFTER_HEADER));
          return { status: 'running', ...(wait !== undefined && { retryAfterMs: wait }) };
        }
        case 'succeeded':
          return invoiceOf(operation);
        default: {
          const code =
            safeCode(operation.error?.innererror?.code) ??
            safeCode(operation.error?.code) ??
            (operation.status === 'failed' ? 'AnalysisFailed' : 'Canceled');
          return failed(code, reasonFor(code));
        }
      }
    },
  };
}

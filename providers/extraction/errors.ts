import type { HttpAnswer } from '../http';
import { ErrorBodySchema, ExtractionError, RETRY_AFTER_HEADER } from './protocol';

/**
 * What the invoice-extraction client makes of the provider's refusals and failures: Azure's error
 * object read through zod, its codes checked and its text made printable and bounded, the key and
 * the document URL redacted, a Retry-After bounded, and a merchant-facing reason for each code. The
 * result is an ExtractionError that says whether to retry and may be logged.
 */

/** The longest wait a Retry-After may ask of us. */
const MAX_RETRY_AFTER_MS = 60_000;

/** A Retry-After header (delta-seconds, or an HTTP date) in milliseconds, bounded; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined): number | undefined {
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
export function networkCode(error: unknown): string | undefined {
  const err = error as { code?: string; cause?: { code?: string; errors?: { code?: string }[] } };
  const found = err.cause?.code ?? err.cause?.errors?.[0]?.code ?? err.code;
  return typeof found === 'string' && /^[A-Z0-9_]{1,40}$/.test(found) ? found : undefined;
}

/** Printable, single-line, bounded: what of the provider's text may reach a message. */
export const printable = (value: string, max = 300) =>
  Array.from(value, (c) => {
    const n = c.codePointAt(0)!;
    return n < 0x20 || (n >= 0x7f && n <= 0x9f) ? ' ' : c;
  })
    .join('')
    .replace(/ {2,}/g, ' ')
    .trim()
    .slice(0, max);

/** An error code as the provider gave it, when it looks like one. */
export const safeCode = (value: string | undefined) =>
  value !== undefined && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : undefined;

/**
 * Removes secrets from a message: the key, the document URL (a presigned URL: a bearer
 * credential), as it is, decoded, JSON-escaped, its query string and each of its query values on
 * its own. Longest first, so the URL goes whole before its parts.
 */
export function redactor(apiKey: string, documentUrl?: string): (message: string) => string {
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
export function reasonFor(code: string | undefined): string {
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

/** A refusal or failure of the provider as ExtractionError: transient for 429, 408 and 5xx. */
export async function refusal(
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
export const commonLead = (status: number): string | undefined => {
  if (status === 401) return 'The extraction provider refused our key';
  if (status === 403) return 'The extraction provider refused the request';
  if (status === 429) return 'The extraction provider is limiting our request rate';
  if (status >= 500) return 'The extraction provider failed';
  return undefined;
};

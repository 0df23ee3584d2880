import { z } from 'zod';

/**
 * The invoice-extraction provider's protocol: Azure AI Document Intelligence's prebuilt-invoice
 * model, REST API v4.0 (api-version 2024-11-30), as its published REST specification
 * (Azure/azure-rest-api-specs, specification/ai/data-plane/DocumentIntelligence/stable/2024-11-30:
 * DocumentIntelligence.json and examples/AnalyzeDocument_Url.json), its error guide
 * (MicrosoftDocs/azure-ai-docs, articles/ai-services/document-intelligence/v3-error-guide.md), its
 * input requirements (includes/input-requirements.md) and the invoice model's field schema
 * (Azure-Samples/document-intelligence-code-samples, schema/2024-11-30-ga/invoice.md) describe it.
 *
 * - Analyze: `POST {endpoint}/documentintelligence/documentModels/prebuilt-invoice:analyze?api-version=2024-11-30`,
 *   header `Ocp-Apim-Subscription-Key: <key>`, JSON body `AnalyzeDocumentRequest` `{urlSource}` or
 *   `{base64Source}` ("Either urlSource or base64Source must be specified"); the same path also
 *   takes the document itself as the body (application/pdf, image/jpeg, image/png, image/tiff,
 *   image/bmp, image/heif, application/octet-stream, ...). Answers 202 Accepted, no body, with
 *   `Operation-Location: {endpoint}/documentintelligence/documentModels/prebuilt-invoice/analyzeResults/{resultId}?api-version=2024-11-30`
 *   (resultId a UUID) and optionally `Retry-After` (integer seconds).
 * - Get Analyze Result: `GET {endpoint}/documentintelligence/documentModels/prebuilt-invoice/analyzeResults/{resultId}?api-version=2024-11-30`
 *   answers 200 `AnalyzeOperation` `{status, createdDateTime, lastUpdatedDateTime, error?, analyzeResult?}`,
 *   status one of notStarted, running, succeeded, failed (the enum also names canceled, skipped).
 *   `analyzeResult` `{apiVersion, modelId, stringIndexType, content, pages, documents?, ...}`; each
 *   document `{docType, spans, confidence, boundingRegions?, fields?}`; each field
 *   `{type, content?, confidence?, spans?, boundingRegions?, value<Type>?}`: InvoiceTotal, AmountDue,
 *   SubTotal, TotalTax are `currency` (`valueCurrency {amount (double), currencySymbol?, currencyCode?
 *   (ISO 4217, "if any")}`), InvoiceDate and DueDate `date` (`valueDate` YYYY-MM-DD), InvoiceId,
 *   VendorName, CustomerName `string` (`valueString`).
 * - Errors: every 4xx and 5xx carries `{error: {code, message, target?, details?, innererror?: {code,
 *   message, innererror?}}}`; top codes InvalidRequest and InvalidArgument (400), Forbidden (403),
 *   NotFound (404), MethodNotAllowed (405), Conflict (409), UnsupportedMediaType (415),
 *   InternalServerError (500, "An unexpected error occurred."), ServiceUnavailable (503); inner codes
 *   among them ParameterMissing, InvalidParameter, InvalidContentSourceFormat ("Invalid content
 *   source: {details}"), ContentSourceNotAccessible ("Content isn't accessible: {details}"),
 *   InvalidContent ("The file is corrupted or format is unsupported. ..."), InvalidContentLength
 *   ("The input image is too large. ..."), ModelNotFound, OperationNotFound ("The identifier is
 *   invalid or the operation is expired."). A failed analysis carries the same `error` object in
 *   the operation (status failed).
 * - Inputs: prebuilt models take PDF, JPEG/JPG, PNG, BMP, TIFF and HEIF (not the Office formats or
 *   HTML); up to 500 MB (S0 tier; 4 MB on F0). Results are deleted 24 hours after the request
 *   (Data, privacy and security for Document Intelligence).
 * - Observed in the Azure SDKs' issue trackers and live tests (real answers, not reference pages):
 *   an api-version the endpoint does not serve is 404 `{"error":{"code":"404","message":"Resource
 *   not found"}}` (azure-sdk-for-net#45441); an unknown model 404 `NotFound` / `ModelNotFound` "The
 *   requested model was not found." (azure-sdk-for-net#55138); a body with neither source 400
 *   `InvalidArgument` / `ParameterMissing` "The parameter urlSource or base64Source is required."
 *   (azure-sdk-for-python#36434); a document URL the service cannot fetch 400 `InvalidRequest` /
 *   `ContentSourceNotAccessible` "Content is not accessible: Invalid data URL" (the .NET SDK's live
 *   tests ignore exactly that 400, azure-sdk-for-net#28923); a wrong key 401
 *   `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API
 *   endpoint. ..."}}` (Cognitive Services' gateway, in azure-sdk-for-js recordings).
 *
 * *Assumed* (no public source we could read shows them exactly):
 * - a document URL is fetched while the analyze request is answered, so an unreachable source, a
 *   non-2xx answer, a slow one (the simulator gives up after 5 s) and one over the size limit are
 *   refusals of the POST (400 ContentSourceNotAccessible, 400 InvalidContentLength), while the
 *   format is judged during the analysis (status failed, InvalidRequest / InvalidContent);
 * - the wording of the refusals of a missing key ("Access denied due to missing subscription key.
 *   ..."), of both sources at once (InvalidArgument / InvalidParameter), of a urlSource that is not
 *   an absolute http(s) URL or a base64Source that is not Base64 (InvalidArgument /
 *   InvalidContentSourceFormat), of a body that is not JSON, and of an unknown result id (404
 *   NotFound / OperationNotFound, the guide's message with its contraction written out);
 * - a 429 carries `Retry-After` (seconds) and `{"error":{"code":"429","message":"Rate limit is
 *   exceeded. Try again in N seconds."}}`; a running analysis answers `Retry-After` (seconds) on
 *   Get Analyze Result too (the specification declares it on the 202 only);
 * - a prebuilt-invoice document's docType is `invoice` (the model's own description names its
 *   docType `prebuilt:invoice`: both are taken);
 * - the key is checked before the path, the api-version and the body (as Cognitive Services'
 *   gateway does for its other APIs).
 */

export const API_VERSION = '2024-11-30';
export const INVOICE_MODEL_ID = 'prebuilt-invoice';
export const KEY_HEADER = 'ocp-apim-subscription-key';
export const OPERATION_LOCATION_HEADER = 'operation-location';
export const RETRY_AFTER_HEADER = 'retry-after';

/** The paths under the endpoint (the api-version goes in the query). */
export const analyzePath = (modelId: string) => `/documentintelligence/documentModels/${modelId}:analyze`;
export const analyzeResultPath = (modelId: string, resultId: string) =>
  `/documentintelligence/documentModels/${modelId}/analyzeResults/${resultId}`;

/** Azure's result ids are UUIDs; we take a conservative superset and nothing else into a URL. */
export const RESULT_ID = /^[A-Za-z0-9-]{1,128}$/;

/** The docTypes a prebuilt-invoice document may carry (*Assumed*: see the header comment). */
export const INVOICE_DOC_TYPES: readonly string[] = ['invoice', 'prebuilt:invoice'];

/** Azure's own limit on a document (S0 tier). */
export const AZURE_MAX_DOCUMENT_BYTES = 500 * 1024 * 1024;

/** Azure's answers, word for word where its documentation or its answers show them. */
export const AzureError = {
  invalidRequest: 'Invalid request.',
  invalidArgument: 'Invalid argument.',
  resourceNotFound: 'Resource not found.',
  internalServerError: 'An unexpected error occurred.',
  serviceUnavailable: 'A transient error occurred. Try again.',
  unsupportedMediaType: "Request content type isn't supported.",
  /** The gateway's answer to a path or api-version it does not serve (observed: no final period). */
  gatewayNotFound: 'Resource not found',
  invalidKey:
    'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key ' +
    'for an active subscription and use a correct regional API endpoint for your resource.',
  /** *Assumed* wording. */
  missingKey:
    'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.',
  parameterMissing: 'The parameter urlSource or base64Source is required.',
  /** *Assumed* wording. */
  bothSources: 'The parameter urlSource or base64Source is invalid: specify only one of them.',
  /** *Assumed* wording (the guide's pattern "Invalid content source: {details}"). */
  urlNotHttp: 'Invalid content source: Url must be an absolute http or https url.',
  /** *Assumed* wording. */
  notBase64: 'Invalid content source: base64Source is not valid Base64.',
  /** *Assumed* wording. */
  bodyNotJson: 'The parameter analyzeRequest is invalid: the request body is not valid JSON.',
  contentNotAccessible: 'Content is not accessible: Invalid data URL',
  invalidContent:
    'The file is corrupted or format is unsupported. Refer to documentation for the list of supported formats.',
  invalidContentLength: 'The input image is too large. Refer to documentation for the maximum file size.',
  modelNotFound: 'The requested model was not found.',
  /** The guide's message, its contraction written out (*Assumed*). */
  operationNotFound: 'The requested operation was not found. The identifier is invalid or the operation is expired.',
  /** *Assumed* wording. */
  rateLimited: (seconds: number) => `Rate limit is exceeded. Try again in ${seconds} seconds.`,
} as const;

/** Azure's error object (also inside a failed operation). */
export interface AzureErrorObject {
  code: string;
  message: string;
  target?: string;
  details?: AzureErrorObject[];
  innererror?: { code?: string; message?: string };
}

export interface AzureErrorBody {
  error: AzureErrorObject;
}

export type OperationStatus = 'notStarted' | 'running' | 'succeeded' | 'failed' | 'canceled' | 'skipped';

export interface AzureSpan {
  offset: number;
  length: number;
}

export interface AzureBoundingRegion {
  pageNumber: number;
  polygon: number[];
}

/** One field of an analysed document, as much of it as the invoice model fills. */
export interface AzureDocumentField {
  type: 'string' | 'date' | 'currency' | 'number' | 'address' | 'array' | 'object' | string;
  valueString?: string;
  valueDate?: string;
  valueNumber?: number;
  valueCurrency?: { amount: number; currencySymbol?: string; currencyCode?: string };
  content?: string;
  boundingRegions?: AzureBoundingRegion[];
  spans?: AzureSpan[];
  confidence?: number;
}

export interface AzureAnalyzedDocument {
  docType: string;
  boundingRegions?: AzureBoundingRegion[];
  spans: AzureSpan[];
  fields?: Record<string, AzureDocumentField>;
  confidence: number;
}

export interface AzureAnalyzeResult {
  apiVersion: string;
  modelId: string;
  stringIndexType: 'textElements' | 'unicodeCodePoint' | 'utf16CodeUnit';
  contentFormat?: 'text' | 'markdown';
  content: string;
  pages: {
    pageNumber: number;
    angle?: number;
    width?: number;
    height?: number;
    unit?: 'pixel' | 'inch';
    spans: AzureSpan[];
    lines?: { content: string; polygon?: number[]; spans: AzureSpan[] }[];
  }[];
  documents?: AzureAnalyzedDocument[];
}

/** The body of Get Analyze Result. */
export interface AzureAnalyzeOperation {
  status: OperationStatus;
  createdDateTime: string;
  lastUpdatedDateTime: string;
  error?: AzureErrorObject;
  analyzeResult?: AzureAnalyzeResult;
}

// ---------------------------------------------------------------------------------------------
// What the client lets through from Azure's answers: checked, bounded, nothing else.

const code = z.string().max(200);
const text = z.string().max(10_000);

export const ErrorObjectSchema = z.object({
  code,
  message: text.optional(),
  innererror: z.object({ code: code.optional(), message: text.optional() }).optional(),
});
export const ErrorBodySchema = z.object({ error: ErrorObjectSchema });

export const CurrencyFieldSchema = z.object({
  type: z.literal('currency'),
  valueCurrency: z.object({
    amount: z.number(),
    currencySymbol: z.string().max(50).optional(),
    currencyCode: z.string().max(50).optional(),
  }),
  confidence: z.number().min(0).max(1).optional(),
});
export const DateFieldSchema = z.object({
  type: z.literal('date'),
  valueDate: z.string().max(50),
  confidence: z.number().min(0).max(1).optional(),
});
export const StringFieldSchema = z.object({
  type: z.literal('string'),
  valueString: z.string().max(100_000).optional(),
  content: z.string().max(100_000).optional(),
  confidence: z.number().min(0).max(1).optional(),
});

export const AnalyzeOperationSchema = z.object({
  status: z.enum(['notStarted', 'running', 'succeeded', 'failed', 'canceled', 'skipped']),
  createdDateTime: z.string().max(100),
  lastUpdatedDateTime: z.string().max(100),
  error: ErrorObjectSchema.optional(),
  analyzeResult: z
    .object({
      modelId: z.string().max(64).optional(),
      documents: z
        .array(
          z.object({
            docType: z.string().max(64),
            // Each field is checked where it is used: one we do not read never fails the answer.
            fields: z.record(z.string().max(200), z.unknown()).optional(),
            confidence: z.number().min(0).max(1).optional(),
          }),
        )
        .max(1_000)
        .optional(),
    })
    .optional(),
});
export type CheckedAnalyzeOperation = z.output<typeof AnalyzeOperationSchema>;

// ---------------------------------------------------------------------------------------------
// Money and dates as our service records them.

/**
 * ISO 4217 minor-unit exponents of the currencies we accept (ISO 4217 list one: KES, TZS, ETB, SSP,
 * CDF, ZMW, MWK, NGN, GHS, ZAR, USD, EUR, GBP have two decimals; UGX, RWF, BIF none).
 */
export const MINOR_UNIT_EXPONENTS: Readonly<Record<string, number>> = {
  KES: 2,
  UGX: 0,
  TZS: 2,
  RWF: 0,
  BIF: 0,
  ETB: 2,
  SSP: 2,
  CDF: 2,
  ZMW: 2,
  MWK: 2,
  NGN: 2,
  GHS: 2,
  ZAR: 2,
  USD: 2,
  EUR: 2,
  GBP: 2,
};

export type MinorUnits = { ok: true; minorUnits: number } | { ok: false; problem: string };

/**
 * A decimal amount as a whole number of the currency's minor units, exactly: from the amount's
 * shortest decimal form (the digits Azure wrote in its JSON), never by multiplying a float (1250.1 *
 * 100 is 125010.00000000001). Refuses what is not finite, not positive, has more fractional digits
 * than `exponent`, or exceeds Number.MAX_SAFE_INTEGER minor units.
 */
export function toMinorUnits(amount: number, exponent: number): MinorUnits {
  if (typeof amount !== 'number' || !Number.isFinite(amount)) return { ok: false, problem: 'is not a number' };
  if (amount <= 0) return { ok: false, problem: 'is not a positive amount' };
  const parts = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(amount));
  if (!parts) return { ok: false, problem: 'is not a decimal amount' };
  const fraction = parts[2] ?? '';
  // amount = digits × 10^-scale
  const digits = BigInt(`${parts[1]}${fraction}`);
  const scale = fraction.length - Number(parts[3] ?? 0);
  if (scale > exponent) return { ok: false, problem: `has more than ${exponent} decimal places` };
  const minor = digits * 10n ** BigInt(exponent - scale);
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) return { ok: false, problem: 'is too large' };
  if (minor <= 0n) return { ok: false, problem: 'is not a positive amount' };
  return { ok: true, minorUnits: Number(minor) };
}

/** YYYY-MM-DD naming a day that exists (no 2026-02-30), year 0001 to 9999. */
export function isCalendarDate(value: string): boolean {
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!parts) return false;
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  return day <= days;
}

/** Most characters a string in `details` keeps. */
export const MAX_DETAIL_CHARS = 500;

// ---------------------------------------------------------------------------------------------
// What the rest of the service sees.

/** An invoice as our service records it. */
export interface ExtractedInvoice {
  /** Positive safe integer, in the currency's minor units. */
  amountMinorUnits: number;
  /** ISO 4217 alpha code, upper case (one of MINOR_UNIT_EXPONENTS). */
  currency: string;
  /** YYYY-MM-DD (a real calendar date). */
  issuedDate: string;
  /** YYYY-MM-DD, not before issuedDate. */
  dueDate: string;
  /**
   * What else was read: invoice_id, vendor_name, customer_name, amount_due_minor_units,
   * sub_total_minor_units, total_tax_minor_units, confidence, when found. Flat and bounded: each
   * string at most MAX_DETAIL_CHARS characters, no NUL, no lone surrogate (Postgres jsonb takes it).
   */
  details: Record<string, string | number | null>;
}

export type AnalysisOutcome =
  | { status: 'running'; retryAfterMs?: number }
  | { status: 'succeeded'; invoice: ExtractedInvoice }
  /**
   * Azure reported the analysis failed, or it succeeded but gave nothing usable (no invoice
   * document, no total, an unknown currency, a total with more decimals than the currency has, no
   * issue or due date, due before issue...). `code` is Azure's (the inner one when present) or one
   * of ours starting with `Unusable`. `reason` is a short human sentence safe to show a merchant.
   */
  | { status: 'failed'; code: string; reason: string };

/**
 * A call that did not get an answer we can use. transient: worth retrying (network error, timeout,
 * 429, 5xx). httpStatus when there was one; code: Azure's error code (the inner one when present).
 * Never carries the key or the document URL (it is a presigned URL: a bearer credential).
 */
export class ExtractionError extends Error {
  override readonly name = 'ExtractionError';
  constructor(
    message: string,
    readonly details: { httpStatus?: number; code?: string; transient: boolean; retryAfterMs?: number },
  ) {
    super(message);
  }
}

export interface InvoiceExtractionClient {
  /**
   * Submits the document at `documentUrl` (a presigned GET URL Azure fetches) for analysis;
   * answers Azure's result id, taken from Operation-Location after checking it points at the
   * configured endpoint and the prebuilt-invoice analyzeResults path (otherwise ExtractionError,
   * not transient).
   */
  analyze(input: { documentUrl: string }): Promise<{ resultId: string }>;
  /**
   * Reads an analysis by result id (the URL is built from the configured endpoint, never from
   * anything the provider sent). A 404 (unknown or expired result) is ExtractionError with
   * httpStatus 404, not transient.
   */
  result(resultId: string): Promise<AnalysisOutcome>;
}

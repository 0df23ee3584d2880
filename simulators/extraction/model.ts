import { z } from 'zod';
import type { AzureAnalyzeResult, AzureErrorObject } from '../../providers/extraction/protocol';

/**
 * The invoice-extraction provider simulator (Azure AI Document Intelligence, prebuilt-invoice, REST
 * API 2024-11-30; see providers/extraction/protocol.ts), refusing what Azure refuses: a missing or
 * wrong `Ocp-Apim-Subscription-Key` (401), an api-version or path it does not serve (404), a model other
 * than prebuilt-invoice (404 ModelNotFound), a body with neither or both of urlSource and
 * base64Source, a urlSource that is not an absolute http(s) URL, a base64Source that is not Base64
 * (400), a media type it does not take (415), a source it cannot fetch (non-2xx, unreachable,
 * slower than `sourceTimeoutMs`: 400 ContentSourceNotAccessible) or over `maxDocumentBytes` (400
 * InvalidContentLength), an unknown or expired result id (404 OperationNotFound).
 *
 * It fetches the document and decides by its content: the format by its magic bytes (PDF, JPEG,
 * PNG, BMP, TIFF, HEIF; anything else fails the analysis, InvalidRequest / InvalidContent); its
 * "OCR" reads the bytes as latin1 and finds the lines `Invoice number: <text>`, `Vendor: <text>`,
 * `Customer: <text>`, `Total: <ISO code> <amount, e.g. 1,250.50>`, `Amount due: <code> <amount>`,
 * `Invoice date: YYYY-MM-DD` and `Due date: YYYY-MM-DD`, each an Azure field when found (a document
 * with none of them still succeeds, with empty `fields`). A line `SIMULATE: <directive>` steers one
 * document: `unreadable` (the analysis fails, InvalidContent), `unreadable-once` (the first analysis
 * of these exact bytes fails, later ones succeed), `slow` (running for 10 × processingMs).
 *
 * Control API (tests): `GET /_control/analyses?sha256=` lists the analyses (result id, the source's
 * content type, the document's sha256 and size, status; the source URL without its query string, a
 * presigned URL's signature), `PATCH /_control/mode` sets `analyze` and `result` (normal, error:
 * HTTP 500, throttle: 429 with Retry-After: 1, timeout: no answer until the client gives up) and
 * `processingMs`; `POST /_control/reset`. Results are kept 24 hours, at most MAX_ANALYSES of them.
 */
export interface ExtractionSimulatorOptions {
  apiKey: string;
  port?: number;
  /** How long an analysis stays notStarted then running; 300 ms unless told. */
  processingMs?: number;
  /** The simulator's limit on a document (Azure's is 500 MB); 20 MB unless told. */
  maxDocumentBytes?: number;
  /** How long the simulator waits for a document's source; 5 s unless told. */
  sourceTimeoutMs?: number;
}

export type DocumentFormat = 'pdf' | 'jpeg' | 'png' | 'bmp' | 'tiff' | 'heif';

export interface SimulatedAnalysis {
  resultId: string;
  modelId: string;
  /** How the document came: fetched from urlSource, decoded from base64Source, or as the request body. */
  source: 'url' | 'base64' | 'body';
  /** The source URL without its query string (a presigned URL's signature), fragment or credentials. */
  sourceUrl?: string;
  /** The source's Content-Type (the request's for a document sent as the body); null when none was given. */
  contentType: string | null;
  sizeBytes: number;
  sha256: string;
  /** The format the bytes are, or null: none of the supported ones. */
  format: DocumentFormat | null;
  directive?: string;
  status: 'notStarted' | 'running' | 'succeeded' | 'failed';
  createdDateTime: string;
}

export interface RunningExtractionSimulator {
  url: string;
  analyses(): SimulatedAnalysis[];
  close(): Promise<void>;
}

const Fault = z.enum(['normal', 'error', 'throttle', 'timeout']);
export const Mode = z.strictObject({
  analyze: Fault.optional(),
  result: Fault.optional(),
  processingMs: z.number().int().min(0).max(600_000).optional(),
});
export type SimulatorMode = Required<z.output<typeof Mode>>;

/** Azure keeps results 24 hours; the simulator as long, and at most this many. */
export const RETENTION_MS = 24 * 60 * 60_000;
export const MAX_ANALYSES = 10_000;
export const DEFAULT_MAX_DOCUMENT_BYTES = 20 * 1024 * 1024;
export const DEFAULT_SOURCE_TIMEOUT_MS = 5_000;

/** How an analysis's document came, as the control API lists it. */
export type DocumentView = Pick<SimulatedAnalysis, 'source' | 'sourceUrl' | 'contentType'>;

/** One analysis as the simulator keeps it. */
export interface Stored {
  view: Omit<SimulatedAnalysis, 'status'>;
  createdMs: number;
  startedMs: number;
  readyMs: number;
  outcome: { status: 'succeeded'; analyzeResult: AzureAnalyzeResult } | { status: 'failed'; error: AzureErrorObject };
}

/** A document as read from its source, or why it could not be. */
export type Fetched =
  | { ok: true; bytes: Buffer; contentType: string | null }
  | { ok: false; inner: 'ContentSourceNotAccessible' | 'InvalidContentLength' };

export const statusOf = (stored: Stored, now: number): SimulatedAnalysis['status'] =>
  now < stored.startedMs ? 'notStarted' : now < stored.readyMs ? 'running' : stored.outcome.status;

import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { controlRouter, faultModes, SimulatorTimers, startSimulatorServer } from './server';
import {
  API_VERSION,
  type AzureAnalyzeResult,
  type AzureDocumentField,
  AzureError,
  type AzureErrorObject,
  analyzePath,
  analyzeResultPath,
  INVOICE_MODEL_ID,
  isCalendarDate,
  KEY_HEADER,
} from '../providers/extraction/protocol';

/**
 * The invoice-extraction provider simulator (Azure AI Document Intelligence, prebuilt-invoice, REST
 * API 2024-11-30; see protocol.ts), refusing what Azure refuses: a missing or wrong
 * `Ocp-Apim-Subscription-Key` (401), an api-version or path it does not serve (404), a model other
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
const Mode = z.strictObject({
  analyze: Fault.optional(),
  result: Fault.optional(),
  processingMs: z.number().int().min(0).max(600_000).optional(),
});
type SimulatorMode = Required<z.output<typeof Mode>>;

/** Azure keeps results 24 hours; the simulator as long, and at most this many. */
const RETENTION_MS = 24 * 60 * 60_000;
export const MAX_ANALYSES = 10_000;
const DEFAULT_MAX_DOCUMENT_BYTES = 20 * 1024 * 1024;
const DEFAULT_SOURCE_TIMEOUT_MS = 5_000;
/** Media types the analyze path takes as the document itself (the specification's `consumes`). */
const DOCUMENT_BODY_TYPES = new Set([
  'application/octet-stream',
  'application/pdf',
  'image/jpeg',
  'image/png',
  'image/tiff',
  'image/bmp',
  'image/heif',
  'text/html',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
]);
const HEIF_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'hevm', 'hevs', 'mif1', 'msf1']);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The format of a document by its first bytes, or null. */
export function formatOf(bytes: Buffer): DocumentFormat | null {
  const at = (offset: number, signature: number[]) => signature.every((b, i) => bytes[offset + i] === b);
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') return 'pdf';
  if (at(0, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  // "BM", reserved bytes zero, a known DIB header size: not any text that begins with BM.
  if (
    at(0, [0x42, 0x4d]) &&
    bytes.length >= 26 &&
    at(6, [0, 0, 0, 0]) &&
    [12, 40, 52, 56, 108, 124].includes(bytes.readUInt32LE(14))
  )
    return 'bmp';
  if (at(0, [0x49, 0x49, 0x2a, 0x00]) || at(0, [0x4d, 0x4d, 0x00, 0x2a])) return 'tiff';
  if (bytes.subarray(4, 8).toString('latin1') === 'ftyp' && HEIF_BRANDS.has(bytes.subarray(8, 12).toString('latin1')))
    return 'heif';
  return null;
}

/** The error objects a failed analysis carries, and refusals' inner errors. */
const invalidContent: AzureErrorObject = {
  code: 'InvalidRequest',
  message: AzureError.invalidRequest,
  innererror: { code: 'InvalidContent', message: AzureError.invalidContent },
};

/** An amount as the simulated OCR reads it: an ISO code, then digits with optional thousands commas and decimals. */
function currencyOf(text: string): AzureDocumentField['valueCurrency'] | undefined {
  const parts = /^([A-Z]{3})\s*((?:\d{1,3}(?:,\d{3})+)|\d+)(\.\d+)?$/.exec(text);
  if (!parts) return undefined;
  const amount = Number(`${parts[2]!.replace(/,/g, '')}${parts[3] ?? ''}`);
  return Number.isFinite(amount) ? { amount, currencyCode: parts[1]! } : undefined;
}

/** The lines the simulated OCR recognizes, and the Azure field each becomes. */
const READERS: { field: string; label: RegExp; value: (text: string) => Partial<AzureDocumentField> | undefined }[] = [
  { field: 'InvoiceId', label: /^Invoice number:\s*(.+)$/i, value: (t) => ({ type: 'string', valueString: t }) },
  { field: 'VendorName', label: /^Vendor:\s*(.+)$/i, value: (t) => ({ type: 'string', valueString: t }) },
  { field: 'CustomerName', label: /^Customer:\s*(.+)$/i, value: (t) => ({ type: 'string', valueString: t }) },
  {
    field: 'InvoiceTotal',
    label: /^Total:\s*(.+)$/i,
    value: (t) => {
      const valueCurrency = currencyOf(t);
      return valueCurrency && { type: 'currency', valueCurrency };
    },
  },
  {
    field: 'AmountDue',
    label: /^Amount due:\s*(.+)$/i,
    value: (t) => {
      const valueCurrency = currencyOf(t);
      return valueCurrency && { type: 'currency', valueCurrency };
    },
  },
  // A date Azure cannot normalize keeps its text and has no valueDate.
  {
    field: 'InvoiceDate',
    label: /^Invoice date:\s*(.+)$/i,
    value: (t) => ({ type: 'date', ...(isCalendarDate(t) && { valueDate: t }) }),
  },
  {
    field: 'DueDate',
    label: /^Due date:\s*(.+)$/i,
    value: (t) => ({ type: 'date', ...(isCalendarDate(t) && { valueDate: t }) }),
  },
];

/** The simulated OCR: the document's printable lines, and the invoice fields among them, in Azure's shape. */
export function readDocument(bytes: Buffer, format: DocumentFormat): AzureAnalyzeResult {
  const lines = bytes
    .toString('latin1')
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    // Text a reader would see: printable, not a PDF comment or a test directive.
    .filter((line) => /^[\x20-\x7e\xa0-\xff\t]+$/.test(line) && /[A-Za-z0-9]/.test(line))
    .filter((line) => !line.startsWith('%') && !/^SIMULATE:/i.test(line))
    .slice(0, 2_000);
  const pdf = format === 'pdf';
  const [width, height, unit] = pdf ? [8.5, 11, 'inch' as const] : [1700, 2200, 'pixel' as const];
  const step = pdf ? 0.25 : 50;
  const polygon = (row: number, chars: number) => {
    const [x0, y0] = [step * 2, step * (row + 2)];
    const [x1, y1] = [x0 + chars * step * 0.4, y0 + step * 0.8];
    return [x0, y0, x1, y0, x1, y1, x0, y1].map((n) => Math.round(n * 100) / 100);
  };
  let offset = 0;
  const placed = lines.map((content, row) => {
    const line = { content, row, offset };
    offset += content.length + 1;
    return line;
  });
  const content = lines.join('\n');
  const fields: Record<string, AzureDocumentField> = {};
  for (const reader of READERS)
    for (const line of placed) {
      if (fields[reader.field]) break;
      const found = reader.label.exec(line.content);
      const text = found?.[1]?.trim();
      const value = text ? reader.value(text) : undefined;
      if (!text || !value) continue;
      const start = line.offset + line.content.lastIndexOf(text);
      fields[reader.field] = {
        type: 'string',
        ...value,
        content: text,
        boundingRegions: [{ pageNumber: 1, polygon: polygon(line.row, text.length) }],
        spans: [{ offset: start, length: text.length }],
        confidence: 0.97,
      };
    }
  const page = [0, 0, width, 0, width, height, 0, height];
  return {
    apiVersion: API_VERSION,
    modelId: INVOICE_MODEL_ID,
    stringIndexType: 'textElements',
    content,
    pages: [
      {
        pageNumber: 1,
        angle: 0,
        width,
        height,
        unit,
        spans: [{ offset: 0, length: content.length }],
        lines: placed.map((line) => ({
          content: line.content,
          polygon: polygon(line.row, line.content.length),
          spans: [{ offset: line.offset, length: line.content.length }],
        })),
      },
    ],
    contentFormat: 'text',
    documents: [
      {
        docType: 'invoice',
        boundingRegions: [{ pageNumber: 1, polygon: page }],
        spans: [{ offset: 0, length: content.length }],
        fields,
        confidence: Object.keys(fields).length > 0 ? 0.95 : 0.1,
      },
    ],
  };
}

/** One analysis as the simulator keeps it. */
interface Stored {
  view: Omit<SimulatedAnalysis, 'status'>;
  createdMs: number;
  startedMs: number;
  readyMs: number;
  outcome: { status: 'succeeded'; analyzeResult: AzureAnalyzeResult } | { status: 'failed'; error: AzureErrorObject };
}

/** The request body as bytes, or an error with status 413 past `limit`. */
function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => Object.assign(new Error('request body too large'), { status: 413, expose: true });
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(tooLarge());
      } else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

type Fetched =
  | { ok: true; bytes: Buffer; contentType: string | null }
  | { ok: false; inner: 'ContentSourceNotAccessible' | 'InvalidContentLength' };

export async function startExtractionSimulator(
  options: ExtractionSimulatorOptions,
): Promise<RunningExtractionSimulator> {
  const timers = new SimulatorTimers();
  const maxDocumentBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
  const sourceTimeoutMs = options.sourceTimeoutMs ?? DEFAULT_SOURCE_TIMEOUT_MS;
  // A JSON body carries the document as Base64: 4/3 of it, and some room.
  const maxRequestBytes = Math.ceil((maxDocumentBytes * 4) / 3) + 64 * 1024;
  const keyDigest = createHash('sha256').update(options.apiKey).digest();
  const analyses = new Map<string, Stored>();
  /** The documents (sha256) whose `unreadable-once` failure has been given. */
  const failedOnce = new Set<string>();

  const control = controlRouter();
  const modes = faultModes<SimulatorMode>(
    control,
    Mode,
    { analyze: 'normal', result: 'normal', processingMs: options.processingMs ?? 300 },
    () => {
      timers.clear();
      analyses.clear();
      failedOnce.clear();
    },
  );

  /** Azure's error envelope. */
  const refuse = (ctx: Context, status: number, error: AzureErrorObject) => {
    ctx.status = status;
    ctx.body = { error };
  };
  const invalidArgument = (ctx: Context, inner: string, message: string) =>
    refuse(ctx, 400, {
      code: 'InvalidArgument',
      message: AzureError.invalidArgument,
      innererror: { code: inner, message },
    });
  const invalidRequest = (ctx: Context, inner: string, message: string) =>
    refuse(ctx, 400, {
      code: 'InvalidRequest',
      message: AzureError.invalidRequest,
      innererror: { code: inner, message },
    });
  /** The gateway's answer to a path or api-version nothing serves. */
  const gatewayNotFound = (ctx: Context) => refuse(ctx, 404, { code: '404', message: AzureError.gatewayNotFound });
  const modelNotFound = (ctx: Context) =>
    refuse(ctx, 404, {
      code: 'NotFound',
      message: AzureError.resourceNotFound,
      innererror: { code: 'ModelNotFound', message: AzureError.modelNotFound },
    });

  /** A fault mode answering for Azure; true when it did. */
  async function fault(ctx: Context, mode: SimulatorMode['analyze']): Promise<boolean> {
    if (mode === 'normal') return false;
    if (mode === 'throttle') {
      ctx.set('Retry-After', '1');
      refuse(ctx, 429, { code: '429', message: AzureError.rateLimited(1) });
    } else if (mode === 'error')
      refuse(ctx, 500, { code: 'InternalServerError', message: AzureError.internalServerError });
    else {
      await timers.hold(60_000, (cancel) => ctx.res.once('close', cancel));
      refuse(ctx, 503, { code: 'ServiceUnavailable', message: AzureError.serviceUnavailable });
    }
    return true;
  }

  /** Forgets results older than Azure keeps them, then the oldest past MAX_ANALYSES. */
  function prune(now: number) {
    for (const [id, stored] of analyses) {
      if (now - stored.createdMs < RETENTION_MS && analyses.size <= MAX_ANALYSES) break;
      analyses.delete(id);
    }
    for (const sha of failedOnce) {
      if (failedOnce.size <= MAX_ANALYSES) break;
      failedOnce.delete(sha);
    }
  }

  const statusOf = (stored: Stored, now: number): SimulatedAnalysis['status'] =>
    now < stored.startedMs ? 'notStarted' : now < stored.readyMs ? 'running' : stored.outcome.status;

  /** Fetches a document as Azure does: 2xx only, bounded in size and time. */
  async function fetchSource(url: string): Promise<Fetched> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), sourceTimeoutMs);
    try {
      const response = await fetch(url, { signal: controller.signal, redirect: 'follow' });
      if (!response.ok || !response.body) {
        await response.body?.cancel().catch(() => {});
        return { ok: false, inner: 'ContentSourceNotAccessible' };
      }
      const declared = Number(response.headers.get('content-length') ?? NaN);
      if (Number.isFinite(declared) && declared > maxDocumentBytes) {
        await response.body.cancel().catch(() => {});
        return { ok: false, inner: 'InvalidContentLength' };
      }
      const reader = response.body.getReader();
      const chunks: Uint8Array[] = [];
      let size = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.length;
        if (size > maxDocumentBytes) {
          await reader.cancel().catch(() => {});
          return { ok: false, inner: 'InvalidContentLength' };
        }
        chunks.push(value);
      }
      return {
        ok: true,
        bytes: Buffer.concat(chunks),
        contentType: response.headers.get('content-type')?.slice(0, 200) ?? null,
      };
    } catch {
      return { ok: false, inner: 'ContentSourceNotAccessible' };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Starts an analysis of `bytes`: its outcome is decided now, shown once processing is over. */
  function analyse(bytes: Buffer, view: Pick<SimulatedAnalysis, 'source' | 'sourceUrl' | 'contentType'>): string {
    const now = Date.now();
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const format = formatOf(bytes);
    const directive = /^[ \t]*SIMULATE:[ \t]*([A-Za-z-]+)[ \t]*$/m.exec(bytes.toString('latin1'))?.[1]?.toLowerCase();
    let outcome: Stored['outcome'];
    if (!format || directive === 'unreadable') outcome = { status: 'failed', error: invalidContent };
    else if (directive === 'unreadable-once' && !failedOnce.has(sha256)) {
      failedOnce.add(sha256);
      outcome = { status: 'failed', error: invalidContent };
    } else outcome = { status: 'succeeded', analyzeResult: readDocument(bytes, format) };
    const processingMs = modes.current.processingMs * (directive === 'slow' ? 10 : 1);
    const resultId = randomUUID();
    analyses.set(resultId, {
      view: {
        resultId,
        modelId: INVOICE_MODEL_ID,
        ...view,
        sizeBytes: bytes.length,
        sha256,
        format,
        ...(directive && { directive }),
        createdDateTime: new Date(now).toISOString(),
      },
      createdMs: now,
      startedMs: now + Math.round(processingMs / 3),
      readyMs: now + processingMs,
      outcome,
    });
    prune(now);
    return resultId;
  }

  /** Every refusal in Azure's envelope: unknown paths, bodies too large or unreadable. */
  const envelope: Middleware = async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) gatewayNotFound(ctx);
    } catch (error) {
      const status = (error as { status?: number }).status ?? 500;
      if (status === 413) invalidRequest(ctx, 'InvalidContentLength', AzureError.invalidContentLength);
      else if (status >= 400 && status < 500) invalidArgument(ctx, 'InvalidParameter', AzureError.bodyNotJson);
      else refuse(ctx, 500, { code: 'InternalServerError', message: AzureError.internalServerError });
    }
  };
  /** The key before anything else (the body is not even read without it), then the api-version. */
  const authorize: Middleware = async (ctx, next) => {
    if (ctx.path.startsWith('/_control')) return next();
    const key = ctx.get(KEY_HEADER);
    if (!key) return refuse(ctx, 401, { code: '401', message: AzureError.missingKey });
    if (!timingSafeEqual(createHash('sha256').update(key).digest(), keyDigest))
      return refuse(ctx, 401, { code: '401', message: AzureError.invalidKey });
    if (ctx.query['api-version'] !== API_VERSION) return gatewayNotFound(ctx);
    await next();
  };
  /** JSON for the control API; the raw bytes (bounded) for the provider's API. */
  const controlJson = bodyParser({ enableTypes: ['json'] });
  const readBody: Middleware = async (ctx, next) => {
    if (ctx.path.startsWith('/_control')) return controlJson(ctx, next);
    if (ctx.method === 'POST') ctx.state.raw = await readRaw(ctx.req, maxRequestBytes);
    await next();
  };

  const api = new Router();
  api.post(analyzePath(':modelId').replace(':analyze', '\\:analyze'), async (ctx) => {
    if (ctx.params.modelId !== INVOICE_MODEL_ID) return modelNotFound(ctx);
    if (await fault(ctx, modes.current.analyze)) return;
    const raw = ctx.state.raw as Buffer;
    const type = ctx.request.type;
    let document: Fetched;
    let view: Pick<SimulatedAnalysis, 'source' | 'sourceUrl' | 'contentType'>;
    if (DOCUMENT_BODY_TYPES.has(type)) {
      document =
        raw.length > maxDocumentBytes
          ? { ok: false, inner: 'InvalidContentLength' }
          : { ok: true, bytes: raw, contentType: type };
      view = { source: 'body', contentType: type };
    } else if (type === 'application/json') {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return invalidArgument(ctx, 'InvalidParameter', AzureError.bodyNotJson);
      }
      const request = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<
        string,
        unknown
      >;
      const urlSource = request.urlSource ?? undefined;
      const base64Source = request.base64Source ?? undefined;
      if (urlSource === undefined && base64Source === undefined)
        return invalidArgument(ctx, 'ParameterMissing', AzureError.parameterMissing);
      if (urlSource !== undefined && base64Source !== undefined)
        return invalidArgument(ctx, 'InvalidParameter', AzureError.bothSources);
      if (urlSource !== undefined) {
        let url: URL | undefined;
        try {
          url = typeof urlSource === 'string' ? new URL(urlSource) : undefined;
        } catch {
          url = undefined;
        }
        if (!url || !/^https?:$/.test(url.protocol))
          return invalidArgument(ctx, 'InvalidContentSourceFormat', AzureError.urlNotHttp);
        document = await fetchSource(url.href);
        view = {
          source: 'url',
          sourceUrl: `${url.origin}${url.pathname}`,
          contentType: document.ok ? document.contentType : null,
        };
      } else {
        if (typeof base64Source !== 'string' || !BASE64.test(base64Source))
          return invalidArgument(ctx, 'InvalidContentSourceFormat', AzureError.notBase64);
        const bytes = Buffer.from(base64Source, 'base64');
        document =
          bytes.length > maxDocumentBytes
            ? { ok: false, inner: 'InvalidContentLength' }
            : { ok: true, bytes, contentType: null };
        view = { source: 'base64', contentType: null };
      }
    } else return refuse(ctx, 415, { code: 'UnsupportedMediaType', message: AzureError.unsupportedMediaType });

    if (!document.ok)
      return document.inner === 'InvalidContentLength'
        ? invalidRequest(ctx, 'InvalidContentLength', AzureError.invalidContentLength)
        : invalidRequest(ctx, 'ContentSourceNotAccessible', AzureError.contentNotAccessible);
    const resultId = analyse(document.bytes, view);
    ctx.set(
      'Operation-Location',
      `${ctx.protocol}://${ctx.host}${analyzeResultPath(INVOICE_MODEL_ID, resultId)}?api-version=${API_VERSION}`,
    );
    ctx.status = 202;
    // An empty body (null would turn the status into 204).
    ctx.body = '';
  });

  const resultPath = analyzeResultPath(':modelId', ':resultId');
  /** The stored analysis a request names, or undefined once it answered 404. */
  const storedFor = (ctx: Context): Stored | undefined => {
    if (ctx.params.modelId !== INVOICE_MODEL_ID) return void modelNotFound(ctx);
    prune(Date.now());
    const stored = analyses.get(ctx.params.resultId ?? '');
    if (!stored)
      refuse(ctx, 404, {
        code: 'NotFound',
        message: AzureError.resourceNotFound,
        innererror: { code: 'OperationNotFound', message: AzureError.operationNotFound },
      });
    return stored;
  };
  api.get(resultPath, async (ctx) => {
    if (ctx.params.modelId === INVOICE_MODEL_ID && (await fault(ctx, modes.current.result))) return;
    const stored = storedFor(ctx);
    if (!stored) return;
    const now = Date.now();
    const status = statusOf(stored, now);
    const iso = (ms: number) => new Date(ms).toISOString();
    const updated =
      status === 'notStarted' ? stored.createdMs : status === 'running' ? stored.startedMs : stored.readyMs;
    if (status === 'notStarted' || status === 'running')
      ctx.set('Retry-After', String(Math.max(1, Math.ceil((stored.readyMs - now) / 1000))));
    ctx.body = {
      status,
      createdDateTime: iso(stored.createdMs),
      lastUpdatedDateTime: iso(updated),
      ...(status === 'failed' && stored.outcome.status === 'failed' && { error: stored.outcome.error }),
      ...(status === 'succeeded' &&
        stored.outcome.status === 'succeeded' && { analyzeResult: stored.outcome.analyzeResult }),
    };
  });
  api.delete(resultPath, (ctx) => {
    const stored = storedFor(ctx);
    if (!stored) return;
    analyses.delete(stored.view.resultId);
    ctx.status = 204;
  });

  const list = () => {
    const now = Date.now();
    prune(now);
    return [...analyses.values()].map((stored) => ({ ...stored.view, status: statusOf(stored, now) }));
  };
  control.get('/analyses', (ctx) => {
    const sha256 = typeof ctx.query.sha256 === 'string' ? ctx.query.sha256 : undefined;
    ctx.body = list().filter((a) => sha256 === undefined || a.sha256 === sha256);
  });

  const server = await startSimulatorServer({
    port: options.port,
    timers,
    before: [envelope, authorize],
    bodyParser: readBody,
    control,
    api,
  });
  return { url: server.url, analyses: list, close: () => server.close() };
}

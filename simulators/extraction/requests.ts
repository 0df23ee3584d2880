import type { Context } from 'koa';
import { AzureError } from '../../providers/extraction/protocol';
import type { DocumentView, Fetched } from './model';
import { invalidArgument, invalidRequest, refuse } from './refusals';
import { fetchSource } from './source';

/**
 * The analyze request's checks, in Azure's order: the media type (a document type taken as the
 * document itself, JSON naming its source, 415 otherwise), then for JSON exactly one of urlSource
 * (an absolute http(s) URL, fetched) and base64Source (Base64), then the document's size and
 * whether its source could be read. Each refusal is Azure's, from ./refusals.ts.
 */

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
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface DocumentLimits {
  maxDocumentBytes: number;
  sourceTimeoutMs: number;
}

/** A document already in hand, unless it is over the limit. */
const bounded = (bytes: Buffer, contentType: string | null, limits: DocumentLimits): Fetched =>
  bytes.length > limits.maxDocumentBytes
    ? { ok: false, inner: 'InvalidContentLength' }
    : { ok: true, bytes, contentType };

/** The document a JSON body names (urlSource or base64Source), or undefined once refused. */
async function sourceOf(
  ctx: Context,
  raw: Buffer,
  limits: DocumentLimits,
): Promise<{ document: Fetched; view: DocumentView } | undefined> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return void invalidArgument(ctx, 'InvalidParameter', AzureError.bodyNotJson);
  }
  const request = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<
    string,
    unknown
  >;
  const urlSource = request.urlSource ?? undefined;
  const base64Source = request.base64Source ?? undefined;
  if (urlSource === undefined && base64Source === undefined)
    return void invalidArgument(ctx, 'ParameterMissing', AzureError.parameterMissing);
  if (urlSource !== undefined && base64Source !== undefined)
    return void invalidArgument(ctx, 'InvalidParameter', AzureError.bothSources);
  if (urlSource !== undefined) {
    let url: URL | undefined;
    try {
      url = typeof urlSource === 'string' ? new URL(urlSource) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol))
      return void invalidArgument(ctx, 'InvalidContentSourceFormat', AzureError.urlNotHttp);
    const document = await fetchSource(url.href, limits.maxDocumentBytes, limits.sourceTimeoutMs);
    return {
      document,
      view: {
        source: 'url',
        sourceUrl: `${url.origin}${url.pathname}`,
        contentType: document.ok ? document.contentType : null,
      },
    };
  }
  if (typeof base64Source !== 'string' || !BASE64.test(base64Source))
    return void invalidArgument(ctx, 'InvalidContentSourceFormat', AzureError.notBase64);
  return {
    document: bounded(Buffer.from(base64Source, 'base64'), null, limits),
    view: { source: 'base64', contentType: null },
  };
}

/** The document an analyze request carries (its raw body in `ctx.state.raw`), and how it came; undefined once refused. */
export async function documentOf(
  ctx: Context,
  limits: DocumentLimits,
): Promise<{ bytes: Buffer; view: DocumentView } | undefined> {
  const raw = ctx.state.raw as Buffer;
  const type = ctx.request.type;
  let found: { document: Fetched; view: DocumentView } | undefined;
  if (DOCUMENT_BODY_TYPES.has(type))
    found = { document: bounded(raw, type, limits), view: { source: 'body', contentType: type } };
  else if (type === 'application/json') found = await sourceOf(ctx, raw, limits);
  else return void refuse(ctx, 415, { code: 'UnsupportedMediaType', message: AzureError.unsupportedMediaType });
  if (!found) return undefined;
  const { document, view } = found;
  if (!document.ok)
    return void (document.inner === 'InvalidContentLength'
      ? invalidRequest(ctx, 'InvalidContentLength', AzureError.invalidContentLength)
      : invalidRequest(ctx, 'ContentSourceNotAccessible', AzureError.contentNotAccessible));
  return { bytes: document.bytes, view };
}

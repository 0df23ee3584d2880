import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { parseGuardedForm, parseGuardedJson } from './input-guard';

const hasBody = (headers: Record<string, string | string[] | undefined>) =>
  headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;

/** Bytes that are not UTF-8 are refused, not silently replaced. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a JSON request body (or, for the routes that take one, a form-encoded body: a provider's
 * callbacks) of at most `limit` bytes through the input guard. Any other media
 * type is 415, a compressed body too (a small body must not inflate past the limit unseen);
 * over the limit is 413; bytes that are not UTF-8, malformed JSON, absurd nesting, NUL, lone
 * surrogates and reserved keys are 400 in the route's family. The text stays in
 * `ctx.request.rawBody` (callbacks keep it); no body leaves `ctx.request.body` undefined.
 */
export function jsonBody(limit: number, format: 'json' | 'form' = 'json'): Middleware {
  const mediaType = format === 'form' ? 'application/x-www-form-urlencoded' : 'application/json';
  return async (ctx, next) => {
    if (!hasBody(ctx.req.headers)) {
      ctx.request.body = undefined;
      return next();
    }
    if (!ctx.is(mediaType)) throw new ServiceError(ErrorCode.UNSUPPORTED_MEDIA_TYPE);
    const encoding = ctx.get('content-encoding').toLowerCase();
    if (encoding && encoding !== 'identity')
      throw new ServiceError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'Unsupported Media Type: send an uncompressed body');
    let bytes: Buffer;
    try {
      bytes = await getRawBody(ctx.req, { limit, length: ctx.get('content-length') || undefined });
    } catch (error) {
      if ((error as { type?: string }).type === 'entity.too.large') throw new ServiceError(ErrorCode.PAYLOAD_TOO_LARGE);
      throw new ServiceError(ErrorCode.INVALID_PARAMS, 'The request body could not be read', [
        { path: 'body', reason: 'incomplete body', sub_code: SubCode.MALFORMED_JSON },
      ]);
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
        { path: 'body', reason: 'not UTF-8', sub_code: SubCode.INVALID_CHARACTERS },
      ]);
    }
    ctx.request.rawBody = text;
    ctx.request.body = format === 'form' ? parseGuardedForm(text) : parseGuardedJson(text);
    return next();
  };
}

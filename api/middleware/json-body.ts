import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { ErrorCode, ServiceError } from '../../domain/errors';

const hasBody = (headers: Record<string, string | string[] | undefined>) =>
  headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;

/**
 * Parses a JSON request body up to `limit` bytes. A body in any other media type is refused with
 * 415 rather than ignored; malformed JSON and an over-size body surface as errors the error
 * middleware shapes. A request without a body leaves `ctx.request.body` undefined.
 */
export function jsonBody(limit: number): Middleware {
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: limit, jsonStrict: true, encoding: 'utf-8' });
  return async (ctx, next) => {
    if (!hasBody(ctx.req.headers)) {
      ctx.request.body = undefined;
      return next();
    }
    if (!ctx.is('application/json')) throw new ServiceError(ErrorCode.UNSUPPORTED_MEDIA_TYPE);
    return parse(ctx, next);
  };
}

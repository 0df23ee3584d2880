import type { Middleware } from 'koa';
import type { Logger } from '../../config/logger';
import { ErrorCode } from '../../domain/errors';
import { errorBody, errorFamilyOf, HTTP_STATUS, isDependencyUnavailable, toServiceError } from '../errors';

/**
 * Every error leaves in the spec's shape for its family. Unexpected exceptions are logged with
 * the request id and answered as INTERNAL_SERVER_ERROR; a stack never reaches the client. Postgres
 * or Temporal not answering is a warning and 503 SERVICE_UNAVAILABLE with Retry-After.
 * Headers set before the error (deprecation, rate limits) stay on the answer.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = toServiceError(thrown);
      if (error.code === ErrorCode.INTERNAL_SERVER_ERROR) {
        logger.error({ req_id: ctx.state.requestId, err: thrown }, 'unhandled error');
      } else if (error !== thrown && isDependencyUnavailable(thrown)) {
        logger.warn({ req_id: ctx.state.requestId, err: thrown }, 'dependency unavailable: answered 503');
      }
      ctx.status = HTTP_STATUS[error.code];
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      // Every 401 names the scheme to use (RFC 9110); presented credentials were refused (RFC 6750).
      if (ctx.status === 401 && !ctx.response.get('WWW-Authenticate')) {
        ctx.set('WWW-Authenticate', ctx.get('Authorization') ? 'Bearer error="invalid_token"' : 'Bearer');
      }
      ctx.body = errorBody(error, errorFamilyOf(ctx.path), String(ctx.state.requestId));
    }
  };
}

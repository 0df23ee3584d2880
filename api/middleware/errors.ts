import type { Middleware } from 'koa';
import type { Logger } from '../../config/logger';
import { ErrorCode } from '../../domain/errors';
import { errorBody, errorFamilyOf, HTTP_STATUS, toServiceError } from '../errors';

/**
 * Every error leaves in the spec's shape for its family. Unexpected exceptions are logged with
 * the request id and answered as INTERNAL_SERVER_ERROR; a stack never reaches the client.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = toServiceError(thrown);
      if (error.code === ErrorCode.INTERNAL_SERVER_ERROR) {
        logger.error({ req_id: ctx.state.requestId, err: thrown }, 'unhandled error');
      }
      ctx.status = HTTP_STATUS[error.code];
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.body = errorBody(error, errorFamilyOf(ctx.path), String(ctx.state.requestId));
    }
  };
}

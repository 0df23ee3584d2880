import type { Middleware } from 'koa';
import type { Logger } from '../../config/logger';
import type { HttpMetrics } from '../metrics';

/**
 * One JSON line and one metrics observation per request. Only the path is logged (callback
 * tokens masked), never the query string, headers or body, which is where tokens, OTPs and
 * images travel.
 */
/**
 * Callback URLs carry their unguessable token (mobile money: the segment after the transaction
 * id; SMS delivery reports: the last segment): it never reaches a log line, whether or not a
 * route matched (a near-miss path or method logs it too).
 */
/** Any case: the routers match a path's segments past its area whatever their case. */
const CALLBACK_TOKENS = [
  /^(\/v1\/transactions\/mobilemoney\/callbacks\/[^/]+\/[^/]+\/)[^/]+/i,
  /^(\/v1\/current-account\/callbacks\/sms\/delivery-reports\/)[^/]+/i,
];
const withoutSecrets = (path: string) =>
  /\/callbacks\//i.test(path)
    ? CALLBACK_TOKENS.reduce((masked, token) => masked.replace(token, '$1[token]'), path)
    : path;

export function accessLog(logger: Logger, metrics: HttpMetrics): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The route template keeps metric labels bounded; unmatched paths share one label.
      const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      const route = typeof matched === 'string' ? matched : 'unmatched';
      metrics.observe({ method: ctx.method, route, status: ctx.status }, seconds);
      logger.info(
        {
          req_id: ctx.state.requestId,
          method: ctx.method,
          path: withoutSecrets(ctx.path),
          route,
          status: ctx.status,
          duration_ms: Math.round(seconds * 1e6) / 1e3,
          organization_id: ctx.state.organizationId,
        },
        'request',
      );
    }
  };
}

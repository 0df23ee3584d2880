import type { Knex } from 'knex';
import type { Context } from 'koa';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../config';
import { ErrorCode, ServiceError } from '../../domain/errors';

/**
 * Two budgets per window: one per caller and one per organization (all its callers together),
 * so one caller's burst cannot exhaust another organization's budget. Counters live in Postgres
 * so every API instance shares them; RATE_LIMIT_MEMORY keeps them in process for a single
 * instance. If Postgres cannot answer, an in-memory limiter stands in rather than failing requests.
 */
export function createRateLimiter(config: Config, db: Knex) {
  const duration = Math.max(1, Math.round(config.RATE_LIMIT_WINDOW / 1000));
  const make = (keyPrefix: string, points: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix, points, duration });
    if (config.RATE_LIMIT_MEMORY) return memory;
    return new RateLimiterPostgres({
      storeClient: db,
      storeType: 'knex',
      tableName: 'rate_limits',
      tableCreated: true,
      keyPrefix,
      points,
      duration,
      insuranceLimiter: memory,
    });
  };
  const perCaller = make('caller', config.RATE_LIMIT_CALLER_POINTS);
  const perOrganization = make('org', config.RATE_LIMIT_ORGANIZATION_POINTS);

  const setHeaders = (ctx: Context, limit: number, res: RateLimiterRes) => {
    ctx.set('RateLimit-Limit', String(limit));
    ctx.set('RateLimit-Remaining', String(Math.max(0, res.remainingPoints)));
    ctx.set('RateLimit-Reset', String(Math.ceil(res.msBeforeNext / 1000)));
  };

  return {
    /** Spends one point of the caller's and the organization's budgets, or throws TOO_MANY_REQUESTS. */
    async consume(ctx: Context, callerKey: string, organizationId: string | null): Promise<void> {
      const budgets: [RateLimiterAbstract, string, number][] = [[perCaller, callerKey, config.RATE_LIMIT_CALLER_POINTS]];
      if (organizationId) budgets.push([perOrganization, organizationId, config.RATE_LIMIT_ORGANIZATION_POINTS]);
      for (const [limiter, key, limit] of budgets) {
        try {
          const res = await limiter.consume(key);
          if (limiter === perCaller) setHeaders(ctx, limit, res);
        } catch (rejection) {
          if (!(rejection instanceof RateLimiterRes)) throw rejection;
          const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
          throw new ServiceError(ErrorCode.TOO_MANY_REQUESTS, undefined, [], {
            'Retry-After': retryAfter,
            'RateLimit-Limit': String(limit),
            'RateLimit-Remaining': '0',
            'RateLimit-Reset': retryAfter,
          });
        }
      }
    },
  };
}
export type RateLimiter = ReturnType<typeof createRateLimiter>;

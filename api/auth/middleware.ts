import type { Context, Middleware } from 'koa';
import type { Logger } from '../../config/logger';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { RateLimiter } from '../middleware/rate-limit';
import type { AnyRoute, RouteInput } from '../route';
import { type Authenticator, credentialTarget } from './authenticator';
import type { Caller } from './caller';
import { requirePermission } from './policy';
import type { ResourceAccessProvider } from './resource-access';

/**
 * Per-route authentication and rate limiting: runs before the body is read, so an anonymous or
 * throttled request costs little. A source address or a target (the user a token names, an API
 * key's prefix) that failed authentication too often is refused 429 before any verification,
 * unless it presents a credential that verified recently.
 * The caller is left in ctx.state.caller.
 */
/** The failed-authentication budgets a request spends: its source address, and its target when it names one. */
function failureBudgets(ip: string, authorization: string | undefined): string[] {
  const target = credentialTarget(authorization);
  return target ? [`ip:${ip}`, target] : [`ip:${ip}`];
}

export function guard(
  route: AnyRoute,
  authenticator: Authenticator,
  rateLimiter: RateLimiter,
  logger: Logger,
): Middleware {
  return async (ctx, next) => {
    let caller: Caller | undefined;
    if (route.auth) {
      const authorization = ctx.get('Authorization') || undefined;
      // A credential verified recently skips the lockout (and cannot fail: it is cached).
      const budgets = authenticator.recognises(authorization) ? [] : failureBudgets(ctx.ip, authorization);
      await rateLimiter.refuseWhileLockedOut(budgets);
      try {
        caller = await authenticator.authenticate(authorization);
      } catch (error) {
        const reason = (error as { reason?: string }).reason;
        if (reason) logger.debug({ req_id: ctx.state.requestId, reason }, 'authentication refused');
        // Only a refused credential counts: Postgres down while looking the caller up is no
        // guess, and counting it would lock every client behind an address out after the outage.
        if (error instanceof ServiceError) await rateLimiter.countFailedAuthentication(budgets);
        throw error;
      }
      if (!route.auth.schemes.includes(caller.scheme)) {
        logger.debug({ req_id: ctx.state.requestId, scheme: caller.scheme }, 'scheme not accepted by route');
        throw new ServiceError(ErrorCode.UNAUTHORISED);
      }
      if (route.auth.refuseWaitingList && caller.scheme === 'user' && caller.status === 'WAITING_LIST') {
        throw new ServiceError(ErrorCode.WAITING_LIST);
      }
      ctx.state.caller = caller;
      ctx.state.organizationId = caller.organizationId;
    }
    if (route.callback) await rateLimiter.consumeCallback(ctx);
    else if (route.rateLimit !== false)
      await rateLimiter.consume(ctx, caller?.id ?? `ip:${ctx.ip}`, caller?.organizationId ?? null);
    await next();
  };
}

/**
 * The route's permission and merchant checks, after validation because they read validated
 * path parameters (the organization or merchant a request targets).
 */
export interface MerchantChecks {
  /** Resource-access provider of each financing issuer. */
  providers: Map<string, ResourceAccessProvider>;
  /** The organization a backend merchant belongs to, if it exists. */
  organizationOf(merchantId: string): Promise<string | undefined>;
}

export async function authorize(
  route: AnyRoute,
  ctx: Context,
  input: RouteInput<never>,
  merchants: MerchantChecks,
): Promise<void> {
  const caller = ctx.state.caller as Caller | undefined;
  if (!route.auth || !caller) return;
  const params = (input.params ?? {}) as Record<string, string>;
  const { permission, organizationParam, merchant } = route.auth;
  if (permission) {
    const target = organizationParam ? params[organizationParam] : caller.organizationId;
    // A platform key without an organization holds PLATFORM grants or nothing; check against any.
    requirePermission(caller, permission, target ?? '*');
  }
  if (merchant) {
    if (caller.scheme !== 'financing') throw new ServiceError(ErrorCode.FORBIDDEN);
    const provider = merchants.providers.get(caller.issuer);
    const merchantId = params[merchant.param];
    // The merchant must belong to the organization the token acts for, whatever the provider says.
    if (!provider || !merchantId || (await merchants.organizationOf(merchantId)) !== caller.organizationId) {
      throw new ServiceError(ErrorCode.FORBIDDEN, 'No access to this merchant');
    }
    let allowed: boolean;
    try {
      allowed = await provider.allows(caller.subject, merchantId, merchant.permission);
    } catch {
      throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, 'The resource-access service does not answer');
    }
    if (!allowed) throw new ServiceError(ErrorCode.FORBIDDEN, 'No access to this merchant');
  }
}

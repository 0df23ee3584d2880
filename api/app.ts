import { LRUCache } from 'lru-cache';
import Koa from 'koa';
import { z } from 'zod';
import { ErrorCode, ServiceError } from '../domain/errors';
import type { AppDeps } from './deps';
import { accessLog } from './middleware/access-log';
import { errorHandler } from './middleware/errors';
import { jsonBody } from './middleware/json-body';
import { requestGuard } from './middleware/input-guard';
import { callbackSources } from './middleware/callback-sources';
import { deprecationOf } from './middleware/deprecation';
import { requestId } from './middleware/request-id';
import { createHttpMetrics } from './metrics';
import { buildOpenApiDocument } from './openapi';
import { authorize, guard, type MerchantChecks } from './auth/middleware';
import { createAuthenticator } from './auth/authenticator';
import { resourceAccessProviders } from './auth/resource-access';
import { createTokenService } from './auth/tokens';
import { createRateLimiter } from './middleware/rate-limit';
import { createIdempotency } from './middleware/idempotency';
import { AreaRouters } from './areas';
import { type AnyRoute, type RouteInput, routerPath } from './route';
import { authRoutes } from './auth/sessions';
import { kycApplicationRoutes } from './kyc/applications';
import { kycCallbackRoutes } from './kyc/callbacks';
import { kycInternalRoutes, expirySweepRoutes } from './kyc/internal';
import { kycVerificationRoutes } from './kyc/verification';
import { kycWorkflows } from './kyc/workflows';
import { organizationOfMerchant } from '../db/auth/merchants';
import { createHotReads } from '../db/kyc/hot-reads';
import { mobileMoneyCallbackRoutes } from './mobile-money/callbacks';
import { systemRoutes } from './platform/system';
import { transactionRoutes } from './mobile-money/transactions';
import { mobileMoneyWorkflows } from './mobile-money/workflows';
import { loanApplicationRoutes } from './loans/applications';
import { installmentRoutes } from './loans/installments';
import { loanServicingRoutes } from './loans/servicing';
import { installmentTransactionRoutes } from './loans/transactions';
import { loanServicingWorkflows, loanWorkflows } from './loans/workflows';
import { activationRoutes } from './current-account/activation';
import { agentRoutes } from './agents/agents';
import { assignmentRoutes } from './agents/assignments';
import { invoiceRoutes } from './financing/invoices';
import { financingWorkflows } from './financing/workflows';
import { presignRoutes } from './financing/presign';
import { deliveryReportRoutes } from './current-account/delivery-reports';
import { emailVerificationRoutes } from './current-account/email-verification';
import { phoneChangeRoutes } from './current-account/phone-change';
import { selfServiceWorkflows } from './current-account/workflows';
import { checkRequest, invalidParams } from './validation';
import { webhookEndpointRoutes } from './webhooks/endpoints';
import { webhookEventRoutes } from './webhooks/events';
import { webhookWorkflows } from './webhooks/workflows';

export interface BuiltApp {
  app: Koa;
  /** Every route the router serves, in registration order (the OpenAPI test walks them). */
  routes: readonly AnyRoute[];
  /** Stops the app's background work (rate-limit syncing, the status listener) once the server no longer serves it. */
  close(): Promise<void>;
}

const BODY_METHODS = new Set(['post', 'put', 'patch']);
const NO_BODY = z.strictObject({}).optional();

/**
 * The organization of a merchant, remembered (a merchant never changes organization) for
 * AUTH_CALLER_CACHE_TTL; an unknown merchant is asked again each time.
 */
function merchantOrganizations(deps: AppDeps): MerchantChecks['organizationOf'] {
  const known = new LRUCache<string, string>({ max: 50_000, ttl: deps.config.AUTH_CALLER_CACHE_TTL });
  return async (merchantId) => {
    const cached = known.get(merchantId);
    if (cached) return cached;
    const organizationId = await organizationOfMerchant(deps.db, merchantId);
    if (organizationId) known.set(merchantId, organizationId);
    return organizationId;
  };
}

/**
 * Builds the Koa app from its dependencies. `extraRoutes` lets a test mount routes of its own
 * through the same middleware, validation and error handling as the real ones.
 */
export function buildApp(deps: AppDeps, options: { extraRoutes?: AnyRoute[] } = {}): BuiltApp {
  const metrics = createHttpMetrics();
  const authenticator = createAuthenticator(deps);
  const tokens = createTokenService({ ...deps, isTrustedIssuer: authenticator.isTrustedIssuer });
  const rateLimiter = createRateLimiter(deps.config, deps.db, deps.logger);
  const idempotency = createIdempotency(deps);
  const merchants: MerchantChecks = {
    providers: resourceAccessProviders(deps.db, deps.config.FINANCING_ISSUERS, deps.config.AUTH_CALLER_CACHE_TTL),
    organizationOf: merchantOrganizations(deps),
  };
  let document: unknown;
  const routes: AnyRoute[] = [];
  routes.push(
    ...systemRoutes(deps, metrics, () => (document ??= buildOpenApiDocument(routes, deps.config.PUBLIC_BASE_URL))),
  );
  routes.push(...authRoutes(deps, tokens));
  routes.push(...kycApplicationRoutes(deps));
  const kyc = kycWorkflows(deps.temporal, deps.config);
  const hotReads = createHotReads(deps.db, deps.config.DATABASE_POOL_MAX);
  routes.push(...kycVerificationRoutes(deps, kyc, hotReads));
  routes.push(...kycCallbackRoutes(deps, kyc, metrics));
  routes.push(...kycInternalRoutes(deps));
  routes.push(...expirySweepRoutes(kyc));
  const transactions = mobileMoneyWorkflows(deps.temporal, deps.config);
  routes.push(...transactionRoutes(deps, transactions));
  routes.push(...mobileMoneyCallbackRoutes(deps, transactions, metrics));
  routes.push(...loanApplicationRoutes(deps, loanWorkflows(deps.temporal, deps.config)));
  routes.push(...installmentTransactionRoutes(deps));
  routes.push(...installmentRoutes(deps));
  routes.push(...loanServicingRoutes(deps, loanServicingWorkflows(deps.temporal)));
  const selfService = selfServiceWorkflows(deps.temporal, deps.config);
  routes.push(...activationRoutes(deps, selfService));
  routes.push(...emailVerificationRoutes(deps, selfService));
  routes.push(...phoneChangeRoutes(deps, selfService));
  routes.push(...deliveryReportRoutes(deps, metrics));
  routes.push(...presignRoutes(deps), ...invoiceRoutes(deps, financingWorkflows(deps.temporal, deps.config)));
  routes.push(...agentRoutes(deps), ...assignmentRoutes(deps));
  routes.push(
    ...webhookEndpointRoutes(deps),
    ...webhookEventRoutes(deps, webhookWorkflows(deps.temporal, deps.config)),
  );
  routes.push(...(options.extraRoutes ?? []));

  /** One JSON body parser per distinct limit; a route's limit follows from its declaration. */
  const parsers = new Map<string, ReturnType<typeof jsonBody>>();
  const parserFor = (limit: number, format: 'json' | 'form') => {
    const key = `${format}:${limit}`;
    if (!parsers.has(key)) parsers.set(key, jsonBody(limit, format));
    return parsers.get(key)!;
  };
  const bodyLimitOf = (route: AnyRoute) =>
    route.callback
      ? (route.callback.bodyLimit ?? deps.config.CALLBACK_BODY_LIMIT)
      : route.bodyLimit === 'verification'
        ? deps.config.BODY_LIMIT_VERIFICATION
        : deps.config.BODY_LIMIT;
  const areas = new AreaRouters();
  for (const route of routes) {
    // Keys are scoped to the caller: an idempotent route must authenticate.
    if (route.idempotent && !route.auth) throw new Error(`${route.operationId} is idempotent but has no auth`);
    // A POST without a declared body still refuses unknown fields rather than dropping them.
    const schemas =
      BODY_METHODS.has(route.method) && !route.request?.body
        ? { ...route.request, body: NO_BODY }
        : (route.request ?? {});
    const { body: bodySchema, ...beforeBody } = schemas;
    const { callback } = route;
    areas.routerFor(route.path).register(
      routerPath(route.path),
      [route.method.toUpperCase()],
      [
        ...deprecationOf(route, deps.config),
        requestGuard(route.path),
        ...(callback
          ? callbackSources(callback.sources, () => metrics.callbackRefused(callback.provider, 'source'))
          : []),
        guard(route, authenticator, rateLimiter, deps.logger),
        // The permission is enforced before the body is read: a caller without it is refused before
        // one byte of a large body is parsed. Path, query and header problems wait for the body's,
        // so every offending field is named at once, unless authorization needs a bad path.
        async (ctx, next) => {
          const checked = checkRequest(beforeBody, {
            params: ctx.params,
            query: ctx.query,
            headers: ctx.headers,
            body: undefined,
          });
          const pathProblem = checked.problems.some((p) => p.path.startsWith('path.'));
          if (pathProblem && (route.auth?.organizationParam || route.auth?.merchant))
            throw invalidParams(checked.problems);
          await authorize(route, ctx, checked.values as RouteInput<never>, merchants);
          ctx.state.checked = checked;
          await next();
        },
        ...(BODY_METHODS.has(route.method) ? [parserFor(bodyLimitOf(route), route.bodyFormat ?? 'json')] : []),
        async (ctx) => {
          const checked = ctx.state.checked as ReturnType<typeof checkRequest>;
          const body = checkRequest(
            { body: bodySchema },
            { params: undefined, query: undefined, headers: undefined, body: ctx.request.body },
          );
          const problems = [...checked.problems, ...body.problems];
          if (problems.length > 0) throw invalidParams(problems);
          const input = { ...checked.values, body: body.values.body } as RouteInput<never>;
          // After validation and authorization: neither kind of refusal is ever stored.
          if (route.idempotent) await idempotency.run(ctx, route, input, () => route.handler(ctx, input));
          else await route.handler(ctx, input);
        },
      ],
    );
  }

  // Behind a load balancer, TRUST_PROXY makes ctx.ip the client's address (X-Forwarded-For),
  // which the unauthenticated rate-limit budgets are keyed by.
  // Only the entries our own proxies appended count: the leftmost is whatever the client sent.
  const app = new Koa({ proxy: deps.config.TRUST_PROXY, maxIpsCount: deps.config.TRUST_PROXY_HOPS });
  app.use(requestId());
  app.use(accessLog(deps.logger, metrics));
  app.use(errorHandler(deps.logger));
  app.use(async (ctx, next) => {
    await next();
    // Nothing answered: no route has this path (a known path with another method got 405).
    if (ctx.status === 404 && ctx.body == null) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such route');
  });
  app.use(areas.middleware());
  return {
    app,
    routes,
    close: async () => {
      await rateLimiter.close();
      await hotReads.close();
    },
  };
}

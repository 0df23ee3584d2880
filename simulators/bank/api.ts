import { createHash, randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { z } from 'zod';
import { ERROR_CODES } from '../../providers/bank/protocol';
import { type Answer, changeMobile, onboard } from './decisions';
import { canonical, ChangeSchema, changeResource, type Decision, OnboardingSchema, onboardingResource } from './model';
import type { BankState } from './state';

/**
 * The bank's API: the OAuth token endpoint (client credentials, Basic auth), then Bearer-token
 * calls to submit and read onboardings and mobile-number changes, every refusal in the bank's
 * envelope `{code, message, fields?}`.
 */

/** Answers a refusal in the bank's envelope (`fields` names each schema issue). */
export function fail(
  ctx: Context,
  status: number,
  code: string,
  message: string,
  issues?: { path: PropertyKey[]; message: string }[],
): void {
  ctx.status = status;
  ctx.body = {
    code,
    message,
    ...(issues && { fields: issues.map((i) => ({ field: i.path.map(String).join('.'), issue: i.message })) }),
  };
}

/** The token endpoint: the client's Basic credentials and the client_credentials grant, form-encoded. */
function oauthRoutes(state: BankState): Router {
  const { options } = state;
  const basic = `Basic ${Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64')}`;
  const oauth = new Router();
  oauth.post('/oauth2/token', (ctx) => {
    const error = (status: number, code: string, description: string) => {
      ctx.status = status;
      if (status === 401) ctx.set('WWW-Authenticate', 'Basic realm="bank"');
      ctx.body = { error: code, error_description: description };
    };
    if (ctx.get('authorization') !== basic) return error(401, 'invalid_client', 'Client authentication failed');
    if (!ctx.is('application/x-www-form-urlencoded')) return error(400, 'invalid_request', 'Form body required');
    const grant = (ctx.request.body as Record<string, unknown>).grant_type;
    if (grant !== 'client_credentials') return error(400, 'unsupported_grant_type', 'Only client_credentials');
    const ttl = options.tokenTtlSeconds ?? 3600;
    const token = randomBytes(32).toString('base64url');
    state.tokens.set(token, Date.now() + ttl * 1000);
    state.tokensIssued++;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { access_token: token, token_type: 'Bearer', expires_in: ttl };
  });
  return oauth;
}

/** A live Bearer token (RFC 6750), else 401; an expired one is forgotten on sight. */
const bearer =
  (state: BankState): Middleware =>
  async (ctx, next) => {
    const token = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
    const expiresAt = token === undefined ? undefined : state.tokens.get(token);
    if (expiresAt !== undefined && expiresAt > Date.now()) return next();
    if (token !== undefined) state.tokens.delete(token);
    ctx.set('WWW-Authenticate', token ? 'Bearer realm="bank", error="invalid_token"' : 'Bearer realm="bank"');
    fail(
      ctx,
      401,
      ERROR_CODES.invalidToken,
      token ? 'The access token is invalid or expired' : 'Bearer token required',
    );
  };

/**
 * A submission's common path: JSON, the Idempotency-Key, the schema, then a replay of the
 * key's first answer (or 409 for another payload); else `act` decides, its answer is stored,
 * and the mode's fault (if any) replaces what the client receives.
 */
async function submission<T>(
  state: BankState,
  ctx: Context,
  operation: 'onboarding' | 'mobileChange',
  decision: z.output<typeof Decision>,
  schema: z.ZodType<T>,
  act: (body: T) => Answer,
) {
  if (decision === 'throttle') {
    ctx.set('Retry-After', '1');
    return fail(ctx, 429, ERROR_CODES.rateLimited, 'Too many requests');
  }
  if (!ctx.is('application/json'))
    return fail(ctx, 415, ERROR_CODES.unsupportedMediaType, 'Content-Type must be application/json');
  const key = ctx.get('idempotency-key');
  if (key.length === 0 || key.length > 255)
    return fail(ctx, 400, ERROR_CODES.validation, 'Idempotency-Key header required', [
      { path: ['Idempotency-Key'], message: 'required, at most 255 characters' },
    ]);
  const parsed = schema.safeParse(ctx.request.body);
  if (!parsed.success) return fail(ctx, 400, ERROR_CODES.validation, 'Invalid request', parsed.error.issues);
  const fingerprint = createHash('sha256')
    .update(`${ctx.path}\n${canonical(ctx.request.body)}`)
    .digest('hex');
  const scope = `${operation}\n${key}`;
  const stored = state.idempotency.get(scope);
  if (stored && stored.fingerprint !== fingerprint)
    return fail(ctx, 409, ERROR_CODES.idempotencyKeyReused, 'Idempotency-Key already used with another request');
  if (stored) {
    ctx.set('Idempotent-Replayed', 'true');
    ctx.status = stored.status;
    ctx.body = stored.body;
    return;
  }
  // The bank's answer is kept once it acted on the request, a refusal it decided included.
  const answer = act(parsed.data);
  state.idempotency.set(scope, { fingerprint, ...answer });
  if (decision === 'error') return fail(ctx, 500, ERROR_CODES.internal, 'Internal server error');
  if (decision === 'timeout') {
    await state.timers.hold(60_000, (cancel) => ctx.res.once('close', cancel));
    return fail(ctx, 504, ERROR_CODES.timeout, 'Upstream timeout');
  }
  ctx.status = answer.status;
  ctx.body = answer.body;
}

/** The token endpoint and the Bearer-protected /v1 API, in that order. */
export function bankApi(state: BankState): Router[] {
  const api = new Router();
  api.use('/v1', bearer(state));
  api.post('/v1/onboardings', (ctx) =>
    submission(state, ctx, 'onboarding', state.mode.onboarding, OnboardingSchema, (body) => onboard(state, body)),
  );
  api.get('/v1/onboardings/by-reference/:reference', (ctx) => {
    const record = state.customers.get(ctx.params.reference ?? '');
    if (!record) return fail(ctx, 404, ERROR_CODES.notFound, 'No onboarding under this reference');
    ctx.body = onboardingResource(record);
  });
  api.post('/v1/customers/:customerId/mobile-number-changes', (ctx) =>
    submission(state, ctx, 'mobileChange', state.mode.mobileChange, ChangeSchema, (body) =>
      changeMobile(state, ctx.params.customerId ?? '', body),
    ),
  );
  api.get('/v1/customers/:customerId/mobile-number-changes/by-reference/:reference', (ctx) => {
    const change = state.changes.get(`${ctx.params.customerId}\n${ctx.params.reference}`);
    if (!change) return fail(ctx, 404, ERROR_CODES.notFound, 'No change under this reference');
    ctx.body = changeResource(change);
  });
  return [oauthRoutes(state), api];
}

import { createHash, randomBytes } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { controlRouter, SimulatorTimers, startSimulatorServer } from '../server';
import { ERROR_CODES, type OnboardingResource, REFUSALS, type RefusalCode } from '../../providers/bank/protocol';
import {
  type BankSimulatorMode,
  type BankSimulatorOptions,
  canonical,
  ChangeSchema,
  Decision,
  DEFAULT_MODE,
  digits,
  Mode,
  now,
  OnboardingSchema,
  REASONS,
  type RunningBankSimulator,
  type SimulatedCustomer,
  type SimulatedMobileNumberChange,
  type Stored,
  summary,
} from './model';

/**
 * The bank simulator (see protocol.ts), refusing what the bank refuses: a token request without
 * the client's Basic credentials (401 invalid_client) or another grant (400); an API call without
 * a live token (401); a body that is not JSON (415, or 400 INVALID_JSON), lacks the
 * Idempotency-Key, or breaks the schema (400 VALIDATION_ERROR naming the fields): unknown fields,
 * dates that are not real past dates, numbers not `+2547`/`+2541`, images that are not base64
 * JPEG or PNG by their magic bytes, a missing back side for an ID card. Then the decisions: a
 * live customer with the same document (409 DUPLICATE_CUSTOMER), a number another customer holds
 * (409 NUMBER_TAKEN), under 18 (422 UNDERAGE), and the mode's.
 *
 * Control API (tests): `PATCH /_control/mode` sets the decisions (`onboarding`, `mobileChange`:
 * approve, pending, reject, error (acted on, then HTTP 500), timeout (acted on, then no answer
 * until the client gives up), throttle (429, nothing done); `decisionDelayMs` before a pending
 * one is decided, `pendingDecision` approve or reject, `onboardingRejection` the code a rejected
 * onboarding gets; a rejected change is NUMBER_TAKEN). `GET /_control/customers` lists every
 * onboarding recorded (images as type, size and sha256), `GET /_control/mobile-number-changes`
 * every change, `GET /_control/tokens` how many tokens were issued, `POST /_control/tokens/expire`
 * expires the live ones, `POST /_control/reset` forgets everything. Status reads obey no mode.
 */
export async function startBankSimulator(options: BankSimulatorOptions): Promise<RunningBankSimulator> {
  const timers = new SimulatorTimers();
  const basic = `Basic ${Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64')}`;
  let mode: BankSimulatorMode = { ...DEFAULT_MODE };
  let tokens = new Map<string, number>();
  let tokensIssued = 0;
  let customers = new Map<string, SimulatedCustomer>(); // by partnerReference
  let changes = new Map<string, SimulatedMobileNumberChange>(); // by customerId + partnerReference
  let idempotency = new Map<string, Stored>(); // by operation + key

  const fail = (
    ctx: Context,
    status: number,
    code: string,
    message: string,
    issues?: { path: PropertyKey[]; message: string }[],
  ) => {
    ctx.status = status;
    ctx.body = {
      code,
      message,
      ...(issues && { fields: issues.map((i) => ({ field: i.path.map(String).join('.'), issue: i.message })) }),
    };
  };
  const resource = ({ customer: _c, documents: _d, ...onboarding }: SimulatedCustomer): OnboardingResource =>
    onboarding;
  const changeResource = ({ newMobileNumber: _n, ...change }: SimulatedMobileNumberChange) => change;
  const live = (c: SimulatedCustomer) => c.status !== 'REJECTED';
  const byCustomerId = (id: string) => [...customers.values()].find((c) => c.customerId === id);
  const numberHolder = (number: string, except?: string) =>
    [...customers.values()].find((c) => live(c) && c.customer.mobileNumber === number && c.customerId !== except);

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
    tokens.set(token, Date.now() + ttl * 1000);
    tokensIssued++;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { access_token: token, token_type: 'Bearer', expires_in: ttl };
  });

  /** A live Bearer token (RFC 6750), else 401; an expired one is forgotten on sight. */
  const bearer: Middleware = async (ctx, next) => {
    const token = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
    const expiresAt = token === undefined ? undefined : tokens.get(token);
    if (expiresAt !== undefined && expiresAt > Date.now()) return next();
    if (token !== undefined) tokens.delete(token);
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
    ctx: Context,
    operation: 'onboarding' | 'mobileChange',
    decision: z.output<typeof Decision>,
    schema: z.ZodType<T>,
    act: (body: T) => { status: number; body: unknown },
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
    const stored = idempotency.get(scope);
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
    idempotency.set(scope, { fingerprint, ...answer });
    if (decision === 'error') return fail(ctx, 500, ERROR_CODES.internal, 'Internal server error');
    if (decision === 'timeout') {
      await timers.hold(60_000, (cancel) => ctx.res.once('close', cancel));
      return fail(ctx, 504, ERROR_CODES.timeout, 'Upstream timeout');
    }
    ctx.status = answer.status;
    ctx.body = answer.body;
  }

  const refusal = (code: string, message: string, status: number) => ({ status, body: { code, message } });

  function onboard(body: z.output<typeof OnboardingSchema>) {
    if (customers.has(body.partnerReference))
      return refusal(ERROR_CODES.duplicateReference, 'partnerReference already used', 409);
    const { customer, documents } = body;
    const adult = new Date(customer.dateOfBirth);
    adult.setUTCFullYear(adult.getUTCFullYear() + 18);
    const duplicate = [...customers.values()].some(
      (c) => live(c) && c.customer.idType === customer.idType && c.customer.idNumber === customer.idNumber,
    );
    const decision = mode.onboarding === 'reject' ? 'reject' : mode.onboarding === 'pending' ? 'pending' : 'approve';
    const refused: RefusalCode | undefined = duplicate
      ? 'DUPLICATE_CUSTOMER'
      : numberHolder(customer.mobileNumber)
        ? 'NUMBER_TAKEN'
        : adult.getTime() > Date.now()
          ? 'UNDERAGE'
          : decision === 'reject'
            ? mode.onboardingRejection
            : undefined;
    const record: SimulatedCustomer = {
      onboardingId: `ONB${randomBytes(8).toString('hex').toUpperCase()}`,
      partnerReference: body.partnerReference,
      status: refused ? 'REJECTED' : decision === 'pending' ? 'PENDING' : 'ACTIVE',
      customerId: refused ? null : `CIF${digits(10)}`,
      accountNumber: refused || decision === 'pending' ? null : `01${digits(11)}`,
      rejection: refused ? { code: refused, reason: REASONS[refused] } : null,
      createdAt: now(),
      decidedAt: decision === 'pending' && !refused ? null : now(),
      customer,
      documents: Object.fromEntries(
        Object.entries(documents).flatMap(([kind, data]) => (data === undefined ? [] : [[kind, summary(data)]])),
      ),
    };
    customers.set(record.partnerReference, record);
    if (refused) return refusal(refused, REASONS[refused], REFUSALS[refused]);
    if (record.status === 'PENDING') {
      const outcome = mode.pendingDecision;
      const rejection = mode.onboardingRejection;
      timers.later(mode.decisionDelayMs, () => {
        record.decidedAt = now();
        if (outcome === 'approve') {
          record.status = 'ACTIVE';
          record.accountNumber = `01${digits(11)}`;
        } else {
          record.status = 'REJECTED';
          record.rejection = { code: rejection, reason: REASONS[rejection] };
        }
      });
    }
    return { status: record.status === 'ACTIVE' ? 201 : 202, body: resource(record) };
  }

  function changeMobile(customerId: string, body: z.output<typeof ChangeSchema>) {
    const holder = byCustomerId(customerId);
    if (!holder) return refusal(ERROR_CODES.customerNotFound, 'No such customer', 404);
    const id = `${customerId}\n${body.partnerReference}`;
    if (changes.has(id)) return refusal(ERROR_CODES.duplicateReference, 'partnerReference already used', 409);
    if (holder.status !== 'ACTIVE') return refusal(ERROR_CODES.customerNotActive, 'The customer is not active', 422);
    if ([...changes.values()].some((c) => c.customerId === customerId && c.status === 'PENDING'))
      return refusal(ERROR_CODES.changeInProgress, 'A change is already under review', 409);
    const taken = numberHolder(body.newMobileNumber, customerId) !== undefined || mode.mobileChange === 'reject';
    const pending = !taken && mode.mobileChange === 'pending';
    const change: SimulatedMobileNumberChange = {
      changeId: `MCH${randomBytes(8).toString('hex').toUpperCase()}`,
      partnerReference: body.partnerReference,
      customerId,
      status: taken ? 'REJECTED' : pending ? 'PENDING' : 'COMPLETED',
      rejection: taken ? { code: 'NUMBER_TAKEN', reason: REASONS.NUMBER_TAKEN } : null,
      createdAt: now(),
      completedAt: taken || pending ? null : now(),
      newMobileNumber: body.newMobileNumber,
    };
    changes.set(id, change);
    if (taken) return refusal('NUMBER_TAKEN', REASONS.NUMBER_TAKEN, REFUSALS.NUMBER_TAKEN);
    const complete = (outcome: 'approve' | 'reject') => {
      // Checked again when it completes: the number may have been taken meanwhile.
      if (outcome === 'reject' || numberHolder(change.newMobileNumber, customerId)) {
        change.status = 'REJECTED';
        change.rejection = { code: 'NUMBER_TAKEN', reason: REASONS.NUMBER_TAKEN };
        return;
      }
      change.status = 'COMPLETED';
      change.completedAt = now();
      holder.customer = { ...holder.customer, mobileNumber: change.newMobileNumber };
    };
    const outcome = mode.pendingDecision;
    if (pending) timers.later(mode.decisionDelayMs, () => complete(outcome));
    else complete('approve');
    return { status: pending ? 202 : 201, body: changeResource(change) };
  }

  const api = new Router();
  api.use('/v1', bearer);
  api.post('/v1/onboardings', (ctx) => submission(ctx, 'onboarding', mode.onboarding, OnboardingSchema, onboard));
  api.get('/v1/onboardings/by-reference/:reference', (ctx) => {
    const record = customers.get(ctx.params.reference ?? '');
    if (!record) return fail(ctx, 404, ERROR_CODES.notFound, 'No onboarding under this reference');
    ctx.body = resource(record);
  });
  api.post('/v1/customers/:customerId/mobile-number-changes', (ctx) =>
    submission(ctx, 'mobileChange', mode.mobileChange, ChangeSchema, (body) =>
      changeMobile(ctx.params.customerId ?? '', body),
    ),
  );
  api.get('/v1/customers/:customerId/mobile-number-changes/by-reference/:reference', (ctx) => {
    const change = changes.get(`${ctx.params.customerId}\n${ctx.params.reference}`);
    if (!change) return fail(ctx, 404, ERROR_CODES.notFound, 'No change under this reference');
    ctx.body = changeResource(change);
  });

  const control = controlRouter();
  control.get('/mode', (ctx) => {
    ctx.body = mode;
  });
  control.patch('/mode', (ctx) => {
    const parsed = Mode.safeParse(ctx.request.body);
    if (!parsed.success) return fail(ctx, 400, ERROR_CODES.validation, 'Invalid mode', parsed.error.issues);
    mode = { ...mode, ...parsed.data };
    ctx.body = mode;
  });
  control.get('/customers', (ctx) => {
    ctx.body = [...customers.values()];
  });
  control.get('/mobile-number-changes', (ctx) => {
    ctx.body = [...changes.values()];
  });
  control.get('/tokens', (ctx) => {
    ctx.body = { issued: tokensIssued, live: [...tokens.values()].filter((at) => at > Date.now()).length };
  });
  control.post('/tokens/expire', (ctx) => {
    for (const token of tokens.keys()) tokens.set(token, 0);
    ctx.status = 204;
  });
  control.post('/reset', (ctx) => {
    timers.clear();
    mode = { ...DEFAULT_MODE };
    tokens = new Map();
    tokensIssued = 0;
    customers = new Map();
    changes = new Map();
    idempotency = new Map();
    ctx.status = 204;
  });

  const server = await startSimulatorServer({
    port: options.port,
    timers,
    before: [
      // Every refusal in the bank's envelope: unknown paths, unreadable JSON, oversized bodies.
      async (ctx, next) => {
        try {
          await next();
          if (ctx.status === 404 && ctx.body === undefined) fail(ctx, 404, ERROR_CODES.notFound, 'No such resource');
        } catch (error) {
          const status = (error as { status?: number }).status ?? 500;
          if (status === 413) fail(ctx, 413, ERROR_CODES.payloadTooLarge, 'Request body too large');
          else if (status === 400) fail(ctx, 400, ERROR_CODES.invalidJson, 'Request body is not valid JSON');
          else fail(ctx, 500, ERROR_CODES.internal, 'Internal server error');
        }
      },
    ],
    // Three images of up to 5 MiB, in base64.
    bodyParser: bodyParser({ enableTypes: ['json', 'form'], jsonLimit: '24mb', formLimit: '16kb' }),
    control,
    api: [oauth, api],
  });
  return { url: server.url, customers: () => [...customers.values()], close: () => server.close() };
}

export type {
  BankSimulatorMode,
  BankSimulatorOptions,
  RunningBankSimulator,
  SimulatedCustomer,
  SimulatedImage,
  SimulatedMobileNumberChange,
} from './model';

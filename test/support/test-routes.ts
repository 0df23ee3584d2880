import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Caller } from '../../api/auth/caller';
import { actingOrganization } from '../../api/auth/policy';
import { type AnyRoute, defineRoute } from '../../api/route';
import { ErrorCode, ServiceError } from '../../domain/errors';

/**
 * Test-only routes, mounted on the test API only, one per error family, so the foundation's
 * middleware, validation and error shapes are checked over real HTTP before the spec's own
 * routes exist. Under /v1/kyc the validation family answers; under /v1/accounts the plain one.
 */
const request = {
  params: z.object({ id: z.uuid() }),
  query: z.strictObject({ size: z.coerce.number().int().min(1).max(100).optional() }),
  headers: z.object({ 'idempotency-key': z.string().max(255).optional() }),
  body: z.strictObject({
    name: z.string().max(10),
    kind: z.enum(['A', 'B']),
    amount: z.strictObject({ value: z.number().int(), currency: z.string() }).optional(),
  }),
};

function echo(prefix: string, family: string): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: `${prefix}/__test__/echo/{id}`,
      operationId: `testEcho${family}`,
      summary: 'Test only: echoes its validated input',
      tags: ['test'],
      request,
      responses: { 200: { description: 'Echo' } },
      handler(ctx, input) {
        ctx.body = { params: input.params, query: input.query, body: input.body };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${prefix}/__test__/crash`,
      operationId: `testCrash${family}`,
      summary: 'Test only: throws an unexpected error',
      tags: ['test'],
      responses: { 200: { description: 'Never' } },
      handler() {
        throw new Error('database password is hunter2');
      },
    }),
  ];
}

/** Executions of the idempotent test routes, by body `value` (the tests pick a fresh value each). */
export const idempotentExecutions = new Map<number, number>();

const IdempotentBody = z.strictObject({
  value: z.number().int(),
  /** Keeps the execution running this long (a duplicate meanwhile must not execute). */
  delay_ms: z.number().int().min(0).max(10_000).optional(),
  /** `throw`: a ServiceError; `crash`: an unexpected error; `answer`: a non-2xx answer without throwing. */
  fail: z.enum(['throw', 'crash', 'answer']).optional(),
});

/**
 * Test-only idempotent routes (plain family, like the transaction creations): each execution is
 * counted and answers 201 with fresh values, so a replay is told from a second execution.
 */
function idempotentTestRoutes(): AnyRoute[] {
  const handler = async (ctx: Context, input: { params?: unknown; body: z.output<typeof IdempotentBody> }) => {
    const { value, delay_ms, fail } = input.body;
    const execution = (idempotentExecutions.get(value) ?? 0) + 1;
    idempotentExecutions.set(value, execution);
    if (delay_ms) await new Promise((resolve) => setTimeout(resolve, delay_ms));
    if (fail === 'throw') throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, 'The provider does not answer');
    if (fail === 'crash') throw new Error('unexpected');
    if (fail === 'answer') {
      ctx.status = 503;
      ctx.body = { code: ErrorCode.SERVICE_UNAVAILABLE, description: 'answered, not thrown' };
      return;
    }
    ctx.status = 201;
    ctx.body = {
      id: randomUUID(),
      value,
      execution,
      params: input.params ?? {},
      created_at: new Date().toISOString(),
      note: 'ünïcödé ✓',
    };
  };
  return [
    defineRoute({
      method: 'post',
      path: '/v1/transactions/__test__/idempotent',
      operationId: 'testIdempotent',
      summary: 'Test only: an idempotent POST that counts its executions',
      tags: ['test'],
      auth: { schemes: ['user'] },
      idempotent: true,
      request: { body: IdempotentBody },
      responses: { 201: { description: 'Executed' } },
      handler,
    }),
    defineRoute({
      method: 'post',
      path: '/v1/transactions/__test__/idempotent/{ref}',
      operationId: 'testIdempotentWithParam',
      summary: 'Test only: the same, under another route template with a path parameter',
      tags: ['test'],
      auth: { schemes: ['user'] },
      idempotent: true,
      request: { params: z.object({ ref: z.string().min(1) }), body: IdempotentBody },
      responses: { 201: { description: 'Executed' } },
      handler,
    }),
  ];
}

const OrganizationQuery = z.strictObject({ organization_id: z.string().min(1).optional() });
const callerOrganization = (ctx: { state: { caller?: Caller } }) => ctx.state.caller!.organizationId;

/** Test-only routes that exercise each authentication and authorization rule. */
function authTestRoutes(): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/kyc/__test__/backend',
      operationId: 'testBackendOnly',
      summary: 'Test only: backend bearer scheme',
      tags: ['test'],
      auth: { schemes: ['user'] },
      responses: { 200: { description: 'Caller' } },
      handler(ctx) {
        const caller = ctx.state.caller as Caller;
        ctx.body = { scheme: caller.scheme, organization_id: caller.organizationId, id: caller.id };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/internal/__test__/sweep',
      operationId: 'testSweepPermission',
      summary: 'Test only: accounts.write at ORG scope for the own organization, or PLATFORM (like the expiry sweep)',
      tags: ['test'],
      auth: { schemes: ['user'], permission: 'accounts.write' },
      request: { query: OrganizationQuery },
      responses: { 200: { description: 'The organization swept' } },
      handler(ctx, { query }) {
        ctx.body = { organization_id: actingOrganization(ctx.state.caller as Caller, query.organization_id) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/internal/__test__/status',
      operationId: 'testOrganizationRule',
      summary: 'Test only: organization_id honoured only for platform API keys',
      tags: ['test'],
      auth: { schemes: ['user', 'api_key', 'partner'] },
      request: { query: OrganizationQuery },
      responses: { 200: { description: 'The organization acted for' } },
      handler(ctx, { query }) {
        ctx.body = { organization_id: actingOrganization(ctx.state.caller as Caller, query.organization_id) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/accounts/__test__/organizations/{organization}',
      operationId: 'testOrganizationPermission',
      summary: 'Test only: accounts.write on the organization named in the path',
      tags: ['test'],
      auth: { schemes: ['user', 'api_key'], permission: 'accounts.write', organizationParam: 'organization' },
      request: { params: z.object({ organization: z.string().min(1) }) },
      responses: { 200: { description: 'Allowed' } },
      handler(ctx, { params }) {
        ctx.body = { organization_id: params.organization, caller_organization_id: callerOrganization(ctx) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/accounts/__test__/waiting',
      operationId: 'testWaitingList',
      summary: 'Test only: refuses users on the waiting list',
      tags: ['test'],
      auth: { schemes: ['user'], refuseWaitingList: true },
      responses: { 200: { description: 'Allowed' } },
      handler(ctx) {
        ctx.body = { organization_id: callerOrganization(ctx) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/financing/__test__/merchants/{merchantId}',
      operationId: 'testMerchantAccess',
      summary: 'Test only: financing bearer scheme with a merchant-scoped permission',
      tags: ['test'],
      auth: { schemes: ['financing'], merchant: { param: 'merchantId', permission: 'financing.write' } },
      request: { params: z.object({ merchantId: z.string().min(1).max(255) }) },
      responses: { 200: { description: 'Allowed' } },
      handler(ctx, { params }) {
        ctx.body = { merchant_id: params.merchantId, organization_id: callerOrganization(ctx) };
      },
    }),
  ];
}

export function testRoutes(): AnyRoute[] {
  return [
    ...authTestRoutes(),
    ...idempotentTestRoutes(),
    ...echo('/v1/kyc', 'Validation'),
    ...echo('/v1/accounts', 'Plain'),
    defineRoute({
      method: 'post',
      path: '/v1/kyc/__test__/upload',
      operationId: 'testUpload',
      summary: 'Test only: takes a large base64 image under the verification body limit',
      tags: ['test'],
      bodyLimit: 'verification',
      request: { body: z.strictObject({ selfie: z.base64() }) },
      responses: { 200: { description: 'Size of the decoded image' } },
      handler(ctx, { body }) {
        ctx.body = { bytes: Buffer.from(body.selfie, 'base64').length };
      },
    }),
  ];
}

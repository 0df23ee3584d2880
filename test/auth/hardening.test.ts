import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '../../api/auth/api-keys';
import { hashSecret } from '../../api/auth/secrets';
import { errorBody } from '../../api/errors';
import { buildApp } from '../../api/app';
import { startApi } from '../../api/server';
import { DEMO } from '../../db/seeds/demo';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { parseGrant } from '../../domain/rbac';
import { requestToken } from '../../simulators/identity';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { testRoutes } from '../support/test-routes';
import { backendToken, bearer, financingToken, partnerAssertion } from '../support/tokens';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('authorization hardening', () => {
  it('a grant string parses only as exactly one known permission and one scope', () => {
    assert.deepEqual(parseGrant('accounts.write:ORG'), { permission: 'accounts.write', scope: 'ORG' });
    for (const text of ['accounts.write:PLATFORM:ORG', 'accounts.write', 'made.up:ORG', 'accounts.write:GLOBAL', '']) {
      assert.equal(parseGrant(text), undefined, text);
    }
  });

  it('an organization API key cannot be given a PLATFORM grant through its permission names', async () => {
    await assert.rejects(
      createApiKey(harness().db, {
        organizationId: DEMO.organizations.demo.id,
        permissions: ['accounts.write:PLATFORM'],
      }),
      /unknown permission/,
    );
  });

  it('a financing issuer can grant only organization-scoped financing permissions', async () => {
    const token = await financingToken('financing', DEMO.merchant.financingSubject, {
      organization_id: DEMO.merchant.organization_id,
      permissions: ['financing.write:ORG', 'financing.read:PLATFORM', 'accounts.write:ORG', 'accounts.write:PLATFORM'],
    });
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(token) });
    assert.deepEqual(me.body.permissions, ['financing.write:ORG']);
  });

  it("a financing token acting for one organization cannot reach another organization's merchant", async () => {
    const token = await financingToken('financing', DEMO.merchant.financingSubject, {
      organization_id: DEMO.organizations.second.id,
      permissions: ['financing.write:ORG'],
    });
    const reply = await call('GET', `/v1/financing/__test__/merchants/${DEMO.merchant.id}`, { headers: bearer(token) });
    assert.equal(reply.status, 403);
  });

  it('a reuse racing a legitimate refresh never leaves two live tokens: the reuse first is a lost answer (one live token, the newest), after it the family is revoked', async () => {
    for (let round = 0; round < 5; round++) {
      const signIn = await call('POST', '/v1/auth/sessions', {
        headers: bearer(await backendToken(DEMO.users.customer.id)),
      });
      const first = signIn.body.refresh_token as string;
      const second = (await call('POST', '/v1/auth/refresh', { json: { refresh_token: first } })).body
        .refresh_token as string;
      await Promise.all([
        call('POST', '/v1/auth/refresh', { json: { refresh_token: second } }),
        call('POST', '/v1/auth/refresh', { json: { refresh_token: first } }),
      ]);
      const { db } = harness();
      const { family_id } = await db('refresh_tokens')
        .where({ token_hash: hashSecret(first) })
        .first();
      const family = await db('refresh_tokens').where({ family_id }).orderBy('created_at');
      const live = family.filter((row) => row.revoked_at === null && row.used_at === null);
      assert.ok(live.length <= 1, `round ${round}: at most one live token`);
      if (live.length === 1) assert.equal(live[0].id, family.at(-1).id, `round ${round}: the live one is the newest`);
    }
  });

  it('a partner registered under a caller-facing issuer is never honoured at the exchange', async () => {
    const { db, config, idp } = harness();
    const id = randomUUID();
    await db('partners').insert({
      id,
      organization_id: DEMO.organizations.second.id,
      name: 'Misconfigured',
      issuer: config.AUTH_ISSUER,
      jwks_url: config.AUTH_JWKS_URL,
    });
    try {
      const userToken = await requestToken(idp.url, 'backend', {
        sub: DEMO.users.customer.id,
        aud: config.PARTNER_EXCHANGE_AUDIENCE,
      });
      const reply = await call('POST', '/v1/auth/exchange', { headers: bearer(userToken), json: {} });
      assert.equal(reply.status, 401);
    } finally {
      await db('partners').where({ id }).del();
    }
  });

  it('a token minted for another audience cannot be exchanged', async () => {
    const reply = await call('POST', '/v1/auth/exchange', {
      headers: bearer(await partnerAssertion({ aud: harness().config.SERVICE_TOKEN_AUDIENCE })),
      json: {},
    });
    assert.equal(reply.status, 401);
  });

  it("a disabled partner's access tokens stop working within the cache TTL", async () => {
    const { db, config } = harness();
    const exchange = await call('POST', '/v1/auth/exchange', { headers: bearer(await partnerAssertion()), json: {} });
    const headers = bearer(exchange.body.access_token);
    assert.equal((await call('GET', '/v1/auth/whoami', { headers })).status, 200);
    await db('partners').where({ id: DEMO.partner.id }).update({ status: 'DISABLED' });
    try {
      await wait(config.AUTH_CALLER_CACHE_TTL + 200);
      assert.equal((await call('GET', '/v1/auth/whoami', { headers })).status, 401);
    } finally {
      await db('partners').where({ id: DEMO.partner.id }).update({ status: 'ACTIVE' });
    }
  });

  it('an identity-provider subject that looks like a uuid is matched as an auth id first', async () => {
    const { db } = harness();
    const user = {
      id: randomUUID(),
      auth_id: randomUUID(),
      organization_id: DEMO.organizations.demo.id,
      email: `${randomUUID()}@demo-lender.test`,
    };
    await db('users').insert(user);
    await db('user_access').insert({ user_id: user.id, organization_id: user.organization_id, role: 'CUSTOMER' });
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(await backendToken(user.auth_id)) });
    assert.equal(me.status, 200);
    assert.equal(me.body.user_id, user.id);
  });

  it('failed authentications spend the client address budget and end in 429', async () => {
    const { deps } = harness();
    const config = { ...deps.config, RATE_LIMIT_AUTH_FAILURE_POINTS: 3 };
    const api = await startApi(buildApp({ ...deps, config }, { extraRoutes: testRoutes() }), '127.0.0.1', 0);
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (await call('GET', '/v1/kyc/__test__/backend', { baseUrl: api.url, headers: bearer('not.a.token') })).status,
        );
      }
      assert.deepEqual(statuses, [401, 401, 401, 429]);
    } finally {
      await api.close();
    }
  });

  it('a plain-family refusal keeps its own code even when it names a field', () => {
    const error = new ServiceError(ErrorCode.FORBIDDEN, 'no', [
      { path: 'query.organization_id', reason: 'x', sub_code: SubCode.NOT_ALLOWED },
    ]);
    assert.deepEqual(errorBody(error, 'plain', 'req-1'), { code: 'FORBIDDEN', description: 'no' });
  });
});

import { strict as assert } from 'node:assert';
import { createApiKey } from '../../api/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { runScript } from '../support/scripts';
import { backendToken, bearer, financingToken, partnerAssertion } from '../support/tokens';

const { users } = DEMO;
const DEMO_ORG = DEMO.organizations.demo.id;
const SECOND_ORG = DEMO.organizations.second.id;

const asUser = async (user: { id: string }, claims: Record<string, unknown> = {}) =>
  bearer(await backendToken(user.id, claims));

describe('spec 5.7: RBAC matrix (accounts.write, as the expiry sweep needs)', () => {
  it('ORG scope on the own organization is allowed', async () => {
    const reply = await call('POST', '/v1/internal/__test__/sweep', { headers: await asUser(users.internal) });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { organization_id: DEMO_ORG });
  });

  it('ORG scope on another organization is refused', async () => {
    const reply = await call('GET', `/v1/accounts/__test__/organizations/${SECOND_ORG}`, {
      headers: await asUser(users.internal),
    });
    assert.equal(reply.status, 403);
    assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description']);
    assert.equal(reply.body.code, 'FORBIDDEN');
    const own = await call('GET', `/v1/accounts/__test__/organizations/${DEMO_ORG}`, {
      headers: await asUser(users.internal),
    });
    assert.equal(own.status, 200);
  });

  it('a token claiming an organization the user has no access to is refused', async () => {
    const reply = await call('POST', '/v1/internal/__test__/sweep', {
      headers: await asUser(users.internal, { organization_id: SECOND_ORG }),
    });
    assert.equal(reply.status, 403);
    assert.equal(reply.body.code, 'FORBIDDEN');
    assert.deepEqual(reply.body.invalid_params, []);
  });

  it('PLATFORM scope is allowed on any organization', async () => {
    const reply = await call('GET', `/v1/accounts/__test__/organizations/${SECOND_ORG}`, {
      headers: await asUser(users.platformAdmin),
    });
    assert.equal(reply.status, 200);
    const sweep = await call('POST', '/v1/internal/__test__/sweep', { headers: await asUser(users.platformAdmin) });
    assert.equal(sweep.status, 200);
  });

  it('a role without the permission is refused', async () => {
    for (const user of [users.customer, users.agent, users.leader]) {
      const reply = await call('POST', '/v1/internal/__test__/sweep', { headers: await asUser(user) });
      assert.equal(reply.status, 403, user.email);
    }
  });
});

describe('spec 5.6: organization_id is honoured only for a platform API key with PLATFORM scope', () => {
  const status = (headers: Record<string, string>, organization?: string) =>
    call('GET', `/v1/internal/__test__/status${organization ? `?organization_id=${organization}` : ''}`, { headers });

  it('a backend user acts for the organization of its token, and passing one is 403', async () => {
    const headers = await asUser(users.internal);
    assert.deepEqual((await status(headers)).body, { organization_id: DEMO_ORG });
    const refused = await status(headers, SECOND_ORG);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'FORBIDDEN');
    assert.deepEqual(
      refused.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      [['query.organization_id', 'NOT_ALLOWED']],
    );
  });

  it('an organization API key acts for its organization, and passing one is 403', async () => {
    const { key } = await createApiKey(harness().db, { organizationId: SECOND_ORG });
    assert.deepEqual((await status(bearer(key))).body, { organization_id: SECOND_ORG });
    assert.equal((await status(bearer(key), DEMO_ORG)).status, 403);
  });

  it('a partner access token acts for its organization, and passing one is 403', async () => {
    const exchange = await call('POST', '/v1/auth/exchange', { headers: bearer(await partnerAssertion()), json: {} });
    const headers = bearer(exchange.body.access_token);
    assert.deepEqual((await status(headers)).body, { organization_id: DEMO.partner.organization_id });
    assert.equal((await status(headers, SECOND_ORG)).status, 403);
  });

  it('a platform API key must pass organization_id, and it is honoured', async () => {
    const { key } = await createApiKey(harness().db, { platform: true });
    assert.deepEqual((await status(bearer(key), SECOND_ORG)).body, { organization_id: SECOND_ORG });
    const missing = await status(bearer(key));
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'INVALID_PARAMS');
    assert.deepEqual(
      missing.body.invalid_params.map((p: { sub_code: string }) => p.sub_code),
      ['REQUIRED'],
    );
  });

  it('a platform key created without PLATFORM-scoped grants cannot choose the organization', async () => {
    const { key } = await createApiKey(harness().db, { platform: true, permissions: [] });
    assert.equal((await status(bearer(key), SECOND_ORG)).status, 403);
  });
});

describe('spec 7: WAITING_LIST', () => {
  it('a user on the waiting list gets WAITING_LIST where the spec lists it; others pass', async () => {
    const refused = await call('GET', '/v1/accounts/__test__/waiting', { headers: await asUser(users.waitingList) });
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body, { code: 'WAITING_LIST', description: 'User is in the waiting list' });
    const allowed = await call('GET', '/v1/accounts/__test__/waiting', { headers: await asUser(users.customer) });
    assert.equal(allowed.status, 200);
  });
});

describe('spec 5.5: financing bearer scheme and merchant-scoped access', () => {
  const merchantRoute = (merchant: string) => `/v1/financing/__test__/merchants/${merchant}`;
  const subject = DEMO.merchant.financingSubject;

  for (const realm of ['financing', 'financing-http'] as const) {
    it(`${realm}: the granted subject may act for the merchant; others and other merchants are 403`, async () => {
      const claims = { organization_id: DEMO.merchant.organization_id, permissions: ['financing.write:ORG'] };
      const allowed = await call('GET', merchantRoute(DEMO.merchant.id), {
        headers: bearer(await financingToken(realm, subject, claims)),
      });
      assert.equal(allowed.status, 200);
      assert.deepEqual(allowed.body, { merchant_id: DEMO.merchant.id, organization_id: DEMO.merchant.organization_id });
      const stranger = await call('GET', merchantRoute(DEMO.merchant.id), {
        headers: bearer(await financingToken(realm, 'fin|stranger', claims)),
      });
      assert.equal(stranger.status, 403);
      assert.equal(stranger.body.code, 'FORBIDDEN');
      assert.deepEqual(stranger.body.invalid_params, []);
      const other = await call('GET', merchantRoute('mrc-someone-else'), {
        headers: bearer(await financingToken(realm, subject, claims)),
      });
      assert.equal(other.status, 403);
    });
  }

  it('organization-scoped permissions come from the token', async () => {
    const token = await financingToken('financing', subject, {
      organization_id: DEMO_ORG,
      permissions: ['financing.read:ORG'],
    });
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(token) });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.permissions, ['financing.read:ORG']);
    assert.equal(me.body.organization_id, DEMO_ORG);
  });
});

describe('API keys and the development CLIs', () => {
  const run = runScript;

  it('apikey create prints only a recognizable key, stored hashed; revoke stops it', async function () {
    this.timeout(60_000);
    const created = await run('dev/apikey.ts', ['create', '--org', DEMO_ORG]);
    assert.equal(created.status, 0, created.stderr);
    const key = created.stdout.trim();
    assert.match(key, /^lsk_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.stdout, `${key}\n`, 'nothing but the key on stdout');
    assert.equal(await harness().db('api_keys').where({ key_hash: key }).first(), undefined, 'never stored in clear');
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(key) });
    assert.equal(me.status, 200);
    assert.equal(me.body.organization_id, DEMO_ORG);

    const keyId = /key id (\S+)/.exec(created.stderr)![1]!;
    const revoked = await run('dev/apikey.ts', ['revoke', keyId]);
    assert.equal(revoked.status, 0, revoked.stderr);
    await new Promise((resolve) => setTimeout(resolve, harness().config.AUTH_CALLER_CACHE_TTL + 100));
    assert.equal((await call('GET', '/v1/auth/whoami', { headers: bearer(key) })).status, 401);
  });

  it('apikey create refuses an unknown organization and a missing scope', async function () {
    this.timeout(60_000);
    assert.notEqual((await run('dev/apikey.ts', ['create', '--org', 'org-nope'])).status, 0);
    assert.notEqual((await run('dev/apikey.ts', ['create'])).status, 0);
  });

  it('user create prints one JSON user (a customer with a current and a credit account) whose e-mail npm run token takes', async function () {
    this.timeout(60_000);
    const created = await run('dev/user.ts', ['create', '--phone', '+254711223340']);
    assert.equal(created.status, 0, created.stderr);
    const user = JSON.parse(created.stdout);
    assert.deepEqual(Object.keys(user).sort(), [
      'account_statuses',
      'accounts',
      'email',
      'id',
      'kyc_status',
      'organization_id',
      'phone',
      'roles',
      'status',
    ]);
    assert.deepEqual(
      [user.organization_id, user.roles, user.status, user.phone, user.kyc_status, user.account_statuses],
      [DEMO_ORG, ['CUSTOMER'], 'ACTIVE', '+254711223340', null, { current: 'PENDING_ACTIVATION', credit: 'ACTIVE' }],
      'a new customer: KYC not started, the current account waiting for its activation',
    );
    const accounts = await harness().db('accounts').where({ user_id: user.id }).orderBy('type');
    assert.deepEqual(
      accounts.map((a: { id: string; type: string }) => [a.type, a.id]),
      [
        ['CREDIT', user.accounts.credit],
        ['CURRENT', user.accounts.current],
      ],
    );
    const token = await run('dev/token.ts', ['--user', user.email]);
    assert.equal(token.status, 0, token.stderr);
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(token.stdout.trim()) });
    assert.equal(me.body.user_id, user.id);
    const agent = await run('dev/user.ts', ['create', '--role', 'AGENT', '--status', 'WAITING_LIST']);
    assert.equal(JSON.parse(agent.stdout).accounts, null, 'only customers get accounts');
    assert.notEqual((await run('dev/user.ts', ['create', '--role', 'KING'])).status, 0);
    assert.notEqual((await run('dev/user.ts', ['create', '--phone', '0711223344'])).status, 0);
  });

  it('user create --stage kyc-approved and active take the customer there through the API (KYC verdict, activation, the bank)', async function () {
    this.timeout(90_000);
    const verified = await run('dev/user.ts', ['create', '--stage', 'kyc-approved']);
    assert.equal(verified.status, 0, verified.stderr);
    const v = JSON.parse(verified.stdout);
    assert.deepEqual(
      [v.kyc_status, v.account_statuses],
      ['APPROVED', { current: 'PENDING_ACTIVATION', credit: 'ACTIVE' }],
    );
    assert.match(v.phone, /^\+2547\d{7}0$/, 'its phone ends in 0 (the mobile-money simulator pays it)');
    const active = await run('dev/user.ts', ['create', '--stage', 'active']);
    assert.equal(active.status, 0, active.stderr);
    const a = JSON.parse(active.stdout);
    assert.deepEqual([a.kyc_status, a.account_statuses], ['APPROVED', { current: 'ACTIVE', credit: 'ACTIVE' }]);
    const account = await harness().db('accounts').where({ id: a.accounts.current }).first();
    assert.ok(account.bank_customer_id && account.bank_account_number, "the bank's customer and account numbers");
    const refused = await run('dev/user.ts', ['create', '--role', 'AGENT', '--stage', 'active']);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /--stage active is for an ACTIVE CUSTOMER/);
    assert.notEqual((await run('dev/user.ts', ['create', '--stage', 'gold'])).status, 0);
  });

  it('token prints only a bearer token that passes the same verification as a real one', async function () {
    this.timeout(60_000);
    const backend = await run('dev/token.ts', ['--user', users.internal.email]);
    assert.equal(backend.status, 0, backend.stderr);
    const me = await call('GET', '/v1/auth/whoami', { headers: bearer(backend.stdout.trim()) });
    assert.equal(me.status, 200);
    assert.equal(me.body.user_id, users.internal.id);

    const financing = await run('dev/token.ts', ['--issuer', 'financing', '--merchant', DEMO.merchant.id]);
    assert.equal(financing.status, 0, financing.stderr);
    const merchant = await call('GET', `/v1/financing/__test__/merchants/${DEMO.merchant.id}`, {
      headers: bearer(financing.stdout.trim()),
    });
    assert.equal(merchant.status, 200);
  });

  it('seed:ids prints the demo ids as one JSON object', async function () {
    this.timeout(30_000);
    const printed = await run('dev/seed-ids.ts', []);
    const ids = JSON.parse(printed.stdout);
    assert.equal(ids.organizations.demo, DEMO_ORG);
    assert.equal(ids.users.customer.email, users.customer.email);
    assert.equal(ids.partner.id, DEMO.partner.id);
    assert.equal(ids.merchant.id, DEMO.merchant.id);
    assert.equal(ids.accounts.customerCurrent.id, DEMO.accounts.customerCurrent.id);
    assert.equal(ids.accounts.customerCredit.type, 'CREDIT');
    const seeded = await harness()
      .db('accounts')
      .whereIn(
        'id',
        Object.values(DEMO.accounts).map((a) => a.id),
      );
    assert.equal(seeded.length, Object.keys(DEMO.accounts).length, 'the seeded accounts are in the database');
  });
});

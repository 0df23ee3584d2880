import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '../../api/auth/api-keys';
import { buildApp } from '../../api/app';
import { REPLAYED_HEADER } from '../../api/middleware/idempotency';
import { type RunningApi, startApi } from '../../api/server';
import { revokeApiKey } from '../../db/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { activationWhen, newApplicant as newCurrentAccountApplicant } from '../support/current-account';
import { applicantHeaders, newApplicant, newApplication } from '../support/kyc';
import { money, newCustomer, until } from '../support/money';
import { bearer } from '../support/tokens';

/**
 * Several API instances behind a load balancer (issue 32, item 2): what one instance keeps in
 * memory (statuses, callers, nothing of idempotency) must stay right when the next request of
 * the same client lands on another. Each instance here is a separate app over the run's
 * Postgres and Temporal, as two processes of `npm run cluster` are.
 */
describe('several API instances: consecutive requests landing on different instances', () => {
  const apis: RunningApi[] = [];
  const instance = async (config: Partial<ReturnType<typeof harness>['config']> = {}) => {
    const { deps } = harness();
    const api = await startApi(buildApp({ ...deps, config: { ...deps.config, ...config } }), '127.0.0.1', 0);
    apis.push(api);
    return api.url;
  };
  afterEach(async () => {
    await Promise.all(apis.splice(0).map((api) => api.close()));
  });

  it('a KYC status each instance keeps is dropped when it changes elsewhere (pg_notify): the next read there is the new one', async () => {
    const { db } = harness();
    const listening = async () =>
      Number(
        (
          await db.raw(
            `select count(*) as n from pg_stat_activity
              where datname = current_database() and query = 'listen kyc_application_changed'`,
          )
        ).rows[0].n,
      );
    const before = await listening();
    const [a, b] = [await instance(), await instance()];
    // Statuses are kept only while an instance listens for changes: both listen first.
    await until('both instances listen', async () => (await listening()) >= before + 2, 5_000);
    const user = await newApplicant();
    const id = await newApplication(user);
    const headers = await applicantHeaders(user);
    const status = async (baseUrl: string) =>
      (await call('GET', `/v1/kyc/applications/${id}/status`, { baseUrl, headers })).body.status as string;
    // A read that overlapped any announced change (another test's runs still sweeping or verifying)
    // is rightly not kept: read a few times, so each instance keeps one.
    for (let i = 0; i < 3; i++) {
      assert.equal(await status(a), 'DRAFT');
      assert.equal(await status(b), 'DRAFT');
    }
    // A change nobody announces (triggers off for this transaction): both still answer what they keep.
    await db.transaction(async (trx) => {
      await trx.raw('set local session_replication_role = replica');
      await trx('kyc_applications').where({ id }).update({ status: 'ID_VERIFICATION_PENDING' });
    });
    assert.equal(await status(a), 'DRAFT', 'a keeps the status');
    assert.equal(await status(b), 'DRAFT', 'b keeps the status');
    // Changed by neither instance, announced as every change is (a worker's step): both read it again.
    await db('kyc_applications').where({ id }).update({ needs_review: false });
    await until('instance a reads the change', async () => (await status(a)) === 'ID_VERIFICATION_PENDING', 2_000);
    await until('instance b reads the change', async () => (await status(b)) === 'ID_VERIFICATION_PENDING', 2_000);
  });

  it('an Idempotency-Key answered by one instance is answered the same by the other, and moves money once', async () => {
    const [a, b] = [await instance(), await instance()];
    const customer = await newCustomer();
    const key = randomUUID();
    const body = { account_id: customer.current, amount: money(10_000), mobile_number: customer.phone };
    const push = (baseUrl: string) =>
      call('POST', '/v1/transactions/mobilemoney/stk-push', {
        baseUrl,
        headers: { ...customer.headers, 'Idempotency-Key': key },
        json: body,
      });
    const first = await push(a);
    assert.equal(first.status, 201, first.text);
    const again = await push(b);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get(REPLAYED_HEADER), 'true');
    assert.deepEqual(again.body, first.body);
    const stored = await harness().db('transactions').where({ account_id: customer.current }).count<{ n: string }[]>({
      n: '*',
    });
    assert.equal(Number(stored[0]!.n), 1, 'one transaction whichever instance answered');
  });

  it('a revoked API key is refused by every instance within AUTH_CALLER_CACHE_TTL, however recently each used it', async () => {
    const ttl = 1_000;
    const [a, b] = [await instance({ AUTH_CALLER_CACHE_TTL: ttl }), await instance({ AUTH_CALLER_CACHE_TTL: ttl })];
    const { id, key } = await createApiKey(harness().db, {
      organizationId: DEMO.organizations.demo.id,
      permissions: ['accounts.read'],
    });
    const whoami = (baseUrl: string) => call('GET', '/v1/auth/whoami', { baseUrl, headers: bearer(key) });
    assert.equal((await whoami(a)).status, 200);
    assert.equal((await whoami(b)).status, 200); // both know the key now
    const revokedAt = Date.now();
    assert.ok(await revokeApiKey(harness().db, id));
    for (const baseUrl of [a, b])
      await until('the instance refuses the revoked key', async () => (await whoami(baseUrl)).status === 401, 3_000);
    assert.ok(Date.now() - revokedAt < ttl + 1_000, 'refused within the cache TTL (plus a poll)');
  });

  it('a code resend is refused on one instance within the cool-down of a code sent through the other (the run holds it)', async () => {
    const [a, b] = [await instance(), await instance()];
    const customer = await newCurrentAccountApplicant();
    const started = await call('POST', '/v1/user/accounts/current/activation', {
      baseUrl: a,
      headers: customer.headers,
    });
    assert.equal(started.status, 201, started.text);
    await activationWhen(customer.headers, (activation) => activation.status === 'AWAITING_OTP');
    const resend = (baseUrl: string) =>
      call('POST', '/v1/user/accounts/current/activation/otp/resend', { baseUrl, headers: customer.headers });
    const soon = await resend(b);
    assert.equal(soon.status, 429, soon.text);
    assert.ok(Number(soon.headers.get('retry-after')) >= 1);
    await new Promise((resolve) => setTimeout(resolve, harness().config.OTP_RESEND_COOLDOWN + 200));
    assert.equal((await resend(b)).status, 200, 'after the cool-down, another code');
    assert.equal((await resend(a)).status, 429, 'and the other instance knows of that one too');
  });
});

import { strict as assert } from 'node:assert';
import type { Context } from 'koa';
import { buildApp } from '../../api/app';
import { createRateLimiter } from '../../api/middleware/rate-limit';
import { type RunningApi, startApi } from '../../api/server';
import { createLogger } from '../../config/logger';
import { createDb } from '../../db/knex';
import { deleteExpired } from '../../db/platform/rate-limits';
import { ErrorCode, type ServiceError } from '../../domain/errors';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { logLines } from '../support/log-lines';
import { call } from '../support/http';
import { testRoutes } from '../support/test-routes';
import { backendToken, bearer } from '../support/tokens';

const ROUTE = '/v1/kyc/__test__/backend';
const PLAIN_ROUTE = '/v1/accounts/__test__/waiting';

/** An API instance with small limits and the shared Postgres store (as production runs). */
async function limitedApi(): Promise<RunningApi> {
  const { deps } = harness();
  const config = {
    ...deps.config,
    RATE_LIMIT_MEMORY: false,
    RATE_LIMIT_CALLER_POINTS: 3,
    RATE_LIMIT_ORGANIZATION_POINTS: 5,
    RATE_LIMIT_WINDOW: 60_000,
    RATE_LIMIT_SYNC_INTERVAL: 50,
  };
  return startApi(buildApp({ ...deps, config }, { extraRoutes: testRoutes() }), '127.0.0.1', 0);
}

/** A limiter on the shared store whose interval outlasts the test: its one write is close()'s. */
function writtenAtClose() {
  const limiter = createRateLimiter(
    { ...harness().deps.config, RATE_LIMIT_MEMORY: false, RATE_LIMIT_SYNC_INTERVAL: 600_000 },
    harness().db,
    createLogger('silent'),
  );
  return { limiter, ctx: { set: () => undefined } as unknown as Context };
}

describe('spec 8: rate limits (429 TOO_MANY_REQUESTS with Retry-After)', () => {
  const apis: RunningApi[] = [];
  beforeEach(async () => {
    await harness().db('rate_limits').del();
  });
  afterEach(async () => {
    await Promise.all(apis.splice(0).map((api) => api.close()));
  });
  const api = async () => {
    const running = await limitedApi();
    apis.push(running);
    return running;
  };
  const as = async (user: { id: string }) => bearer(await backendToken(user.id));

  it('a burst over the caller limit gets 429 with Retry-After and RateLimit headers, in the route family shape', async () => {
    const { url } = await api();
    const headers = await as(DEMO.users.customer);
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const reply = await call('GET', ROUTE, { baseUrl: url, headers });
      statuses.push(reply.status);
      assert.equal(reply.headers.get('ratelimit-limit'), '3');
      assert.equal(reply.headers.get('ratelimit-remaining'), String(2 - i));
    }
    assert.deepEqual(statuses, [200, 200, 200]);
    const limited = await call('GET', ROUTE, { baseUrl: url, headers });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'TOO_MANY_REQUESTS');
    assert.deepEqual(limited.body.invalid_params, []);
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');

    const plain = await call('GET', PLAIN_ROUTE, { baseUrl: url, headers });
    assert.equal(plain.status, 429);
    assert.deepEqual(plain.body, { code: 'TOO_MANY_REQUESTS', description: 'Too Many Requests' });
  });

  it("one caller's burst does not limit another organization", async () => {
    const { url } = await api();
    const noisy = await as(DEMO.users.customer);
    for (let i = 0; i < 4; i++) await call('GET', ROUTE, { baseUrl: url, headers: noisy });
    assert.equal((await call('GET', ROUTE, { baseUrl: url, headers: noisy })).status, 429);
    assert.equal(
      (await call('GET', ROUTE, { baseUrl: url, headers: await as(DEMO.users.secondCustomer) })).status,
      200,
    );
  });

  it("an organization's callers share one organization budget", async () => {
    const { url } = await api();
    const first = await as(DEMO.users.customer);
    const second = await as(DEMO.users.agent);
    for (let i = 0; i < 3; i++) assert.equal((await call('GET', ROUTE, { baseUrl: url, headers: first })).status, 200);
    assert.equal((await call('GET', ROUTE, { baseUrl: url, headers: second })).status, 200);
    assert.equal((await call('GET', ROUTE, { baseUrl: url, headers: second })).status, 200);
    // Six requests from the organization: over its budget of five though this caller has used two.
    assert.equal((await call('GET', ROUTE, { baseUrl: url, headers: second })).status, 429);
  });

  it('API instances share the counters through Postgres (synced every RATE_LIMIT_SYNC_INTERVAL)', async () => {
    const [a, b] = [await api(), await api()];
    const headers = await as(DEMO.users.customer);
    const sync = () => new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await call('GET', ROUTE, { baseUrl: a.url, headers })).status, 200);
    await sync();
    assert.equal((await call('GET', ROUTE, { baseUrl: b.url, headers })).status, 200);
    await sync();
    assert.equal((await call('GET', ROUTE, { baseUrl: a.url, headers })).status, 200);
    await sync();
    const refused = await call('GET', ROUTE, { baseUrl: b.url, headers });
    assert.equal(refused.status, 429, 'b knows of the two requests a admitted');
    const stored = await harness()
      .db('rate_limits')
      .where({ key: `caller:user:${DEMO.users.customer.id}` })
      .first();
    assert.equal(stored.points, 3, 'the shared counter holds every admitted request');
  });

  it('instances bursting at once overshoot a budget by at most what the others admit in one sync interval', async () => {
    // The bound (api/middleware/rate-limit.ts): each instance decides from the shared count plus
    // what it admitted since, so n instances together admit at most n × the budget per interval.
    const instances = [await api(), await api()];
    const headers = await as(DEMO.users.customer);
    const burst = await Promise.all(
      instances.flatMap((instance) =>
        Array.from({ length: 10 }, () => call('GET', ROUTE, { baseUrl: instance.url, headers })),
      ),
    );
    const admitted = burst.filter((reply) => reply.status === 200).length;
    assert.ok(admitted >= 3, `the budget is admitted (${admitted})`);
    assert.ok(admitted <= instances.length * 3, `overshoot ${admitted - 3} beyond one budget per other instance`);
    // One interval later every instance knows what all admitted: none admits more.
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const instance of instances)
      assert.equal((await call('GET', ROUTE, { baseUrl: instance.url, headers })).status, 429);
  });

  it('while the shared store is unreachable, budgets count locally and one warning stands for every failed sync', async () => {
    const { lines, sink } = logLines();
    // Nothing listens on port 1: every sync fails at once.
    const quiet = { warn: () => undefined, error: () => undefined };
    const deadStore = createDb('postgres://postgres@127.0.0.1:1/none', 1, quiet);
    const limiter = createRateLimiter(
      { ...harness().deps.config, RATE_LIMIT_MEMORY: false, RATE_LIMIT_CALLER_POINTS: 2, RATE_LIMIT_SYNC_INTERVAL: 50 },
      deadStore,
      createLogger('warn', sink),
    );
    const ctx = { set: () => undefined } as unknown as Context;
    try {
      // Forty callers of one organization, each new to the instance: forty failed syncs.
      for (let i = 0; i < 40; i++) await limiter.consume(ctx, `caller:test-${i}`, 'org-outage');
      await assert.rejects(
        (async () => {
          for (let i = 0; i < 3; i++) await limiter.consume(ctx, 'caller:test-0', 'org-outage');
        })(),
        (error: ServiceError) => error.code === ErrorCode.TOO_MANY_REQUESTS,
        'the local count still refuses a caller over its budget',
      );
      const warnings = lines.map((l) => JSON.parse(l) as { msg: string; failed_syncs: number });
      assert.ok(warnings.length >= 1 && warnings.length <= 2, `${warnings.length} warnings (one per budget at most)`);
      assert.ok(warnings.every((w) => w.msg === 'rate-limit store unavailable; counting locally'));
    } finally {
      await limiter.close().catch(() => undefined);
      await deadStore.destroy();
    }
  });

  it("one statement writes an interval's spending, every key of every budget", async () => {
    const { db } = harness();
    const { limiter, ctx } = writtenAtClose();
    const writes: string[] = [];
    const onQuery = (query: { sql: string }) => {
      if (/^\s*insert into rate_limits/i.test(query.sql)) writes.push(query.sql);
    };
    db.on('query', onQuery);
    try {
      for (let i = 0; i < 20; i++) await limiter.consume(ctx, `caller:batch-${i}`, 'org-batch');
      await limiter.consume(ctx, 'caller:batch-0', 'org-batch');
      await limiter.close();
    } finally {
      db.removeListener('query', onQuery);
    }
    assert.equal(writes.length, 1, 'twenty-one keys spent, one write');
    const stored = await db('rate_limits')
      .where('key', 'like', 'caller:caller:batch-%')
      .orWhere({ key: 'org:org-batch' });
    const points = Object.fromEntries(stored.map((row: { key: string; points: number }) => [row.key, row.points]));
    assert.equal(Object.keys(points).length, 21);
    assert.equal(points['org:org-batch'], 21);
    assert.equal(points['caller:caller:batch-0'], 2);
    assert.equal(points['caller:caller:batch-19'], 1);
  });

  it("keys from token claims with a NUL or lone surrogates are stored hashed: one odd key never fails the interval's write", async () => {
    const { db } = harness();
    const { limiter, ctx } = writtenAtClose();
    // Two lone surrogates Postgres would both read as U+FFFD: one row twice in one upsert.
    for (const key of ['financing:odd\u0000sub', 'financing:odd\ud800', 'financing:odd\udc00', 'user:plain-odd'])
      await limiter.consume(ctx, key, null);
    await limiter.close();
    const keys = (
      await db('rate_limits').where('key', 'like', 'caller:%odd%').orWhere('key', 'like', 'caller:sha256:%')
    ).map((row: { key: string }) => row.key);
    assert.ok(keys.includes('caller:user:plain-odd'), 'the plain key is written as it is');
    assert.equal(keys.filter((key) => key.startsWith('caller:sha256:')).length, 3, 'the three odd keys, hashed apart');
  });

  it('counts whose window ended over an hour ago are deleted; current ones stay', async () => {
    const { db } = harness();
    const now = Date.now();
    await db('rate_limits').insert([
      { key: 'caller:expired-long-ago', points: 3, expire: now - 2 * 3_600_000 },
      { key: 'caller:expired-just-now', points: 3, expire: now - 60_000 },
      { key: 'caller:current', points: 3, expire: now + 60_000 },
    ]);
    assert.equal(await deleteExpired(db, now - 3_600_000, 1), 1);
    const left = (await db('rate_limits').select('key')).map((row: { key: string }) => row.key).sort();
    assert.deepEqual(left, ['caller:current', 'caller:expired-just-now']);
  });

  it('health and metrics endpoints are not rate limited', async () => {
    const { url } = await api();
    for (let i = 0; i < 8; i++) assert.equal((await call('GET', '/healthz', { baseUrl: url })).status, 200);
  });
});

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { buildApp } from '../../api/app';
import { startApi } from '../../api/server';
import { createDb } from '../../db/knex';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { money, newCustomer, until } from '../support/money';
import { freePort } from '../support/ports';

/** Serves the app built from the harness's dependencies with some replaced, for one check. */
async function withApp<T>(
  overrides: Partial<ReturnType<typeof harness>['deps']>,
  check: (baseUrl: string) => Promise<T>,
) {
  const api = await startApi(buildApp({ ...harness().deps, ...overrides }), '127.0.0.1', 0);
  try {
    return await check(api.url);
  } finally {
    await api.close();
  }
}

describe('health, readiness and metrics', () => {
  it('GET /healthz answers while the process is alive', async () => {
    const reply = await call('GET', '/healthz');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { status: 'ok' });
  });

  it('GET /readyz is 200 when Postgres and Temporal answer', async () => {
    const reply = await call('GET', '/readyz');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
  });

  it('GET /readyz is 503 naming Postgres when Postgres is down', async () => {
    const db = createDb(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1, harness().logger);
    try {
      const reply = await withApp({ db }, (baseUrl) => call('GET', '/readyz', { baseUrl }));
      assert.equal(reply.status, 503);
      assert.equal(reply.body.status, 'unavailable');
      assert.equal(reply.body.checks.temporal, 'ok');
      assert.match(reply.body.checks.postgres, /^unreachable/);
    } finally {
      await db.destroy();
    }
  });

  it('GET /readyz is 503 naming Temporal when Temporal is down', async () => {
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, connectTimeout: 500 });
    try {
      const temporal = new Client({ connection });
      const reply = await withApp({ temporal }, (baseUrl) => call('GET', '/readyz', { baseUrl }));
      assert.equal(reply.status, 503);
      assert.equal(reply.body.checks.postgres, 'ok');
      assert.match(reply.body.checks.temporal, /^unreachable/);
      // The SDK retries the probe's call until its deadline; let it end before closing.
      await new Promise((resolve) => setTimeout(resolve, harness().config.READINESS_TIMEOUT + 500));
    } finally {
      await connection.close();
    }
  });

  it('GET /metrics counts requests by route template and status in Prometheus format', async () => {
    await call('GET', '/healthz');
    await call('GET', '/v1/accounts/no/such/route');
    const reply = await call('GET', '/metrics');
    assert.equal(reply.status, 200);
    assert.match(reply.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(reply.text, /http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    assert.match(reply.text, /http_requests_total\{method="GET",route="unmatched",status="404"\} \d+/);
    assert.match(
      reply.text,
      /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/healthz",status="200"\}/,
    );
  });
});

describe('a dependency that does not answer', () => {
  /** The plain error shape with Retry-After: what a client is told while Postgres or Temporal is down. */
  function assertUnavailable(reply: Awaited<ReturnType<typeof call>>) {
    assert.equal(reply.status, 503);
    assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description']);
    assert.equal(reply.body.code, 'SERVICE_UNAVAILABLE');
    assert.match(reply.headers.get('retry-after') ?? '', /^\d+$/);
  }

  it('Postgres down: 503 SERVICE_UNAVAILABLE in the family shape with Retry-After (never 500), and no lockout after it', async () => {
    const customer = await newCustomer();
    const config = { ...harness().config, RATE_LIMIT_MEMORY: true, RATE_LIMIT_AUTH_FAILURE_POINTS: 2 };
    const db = createDb(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 1, harness().logger);
    try {
      await withApp({ db, config }, async (baseUrl) => {
        // More requests than failed authentications allowed per address: a caller that could not
        // be looked up was not refused, so none of them counts towards a lockout (429).
        for (let i = 0; i < 4; i++)
          assertUnavailable(
            await call('GET', `/v1/transactions/${randomUUID()}`, { baseUrl, headers: customer.headers }),
          );
        const kyc = await call('GET', `/v1/kyc/applications/${randomUUID()}/status`, {
          baseUrl,
          headers: customer.headers,
        });
        assert.equal(kyc.status, 503);
        assert.equal(kyc.body.code, 'SERVICE_UNAVAILABLE');
        assert.deepEqual(kyc.body.invalid_params, []);
      });
    } finally {
      await db.destroy();
    }
  });

  /** A push sent to an API whose Temporal does not answer. */
  async function pushWhileTemporalDown(push: { json: unknown; headers: Record<string, string> }) {
    // No client-side retries: the answer comes at once rather than after the SDK's ~20 s of them.
    const connection = Connection.lazy({
      address: `127.0.0.1:${await freePort()}`,
      connectTimeout: 500,
      interceptors: [],
    });
    try {
      return await withApp({ temporal: new Client({ connection }) }, (baseUrl) =>
        call('POST', '/v1/transactions/mobilemoney/stk-push', { ...push, baseUrl }),
      );
    } finally {
      await connection.close();
    }
  }
  const stored = async (accountId: string) =>
    (await harness().db('transactions').where({ account_id: accountId }).select('id', 'status')) as {
      id: string;
      status: string;
    }[];

  it('Temporal down: a push without an Idempotency-Key is 503 and leaves no transaction behind', async () => {
    const customer = await newCustomer();
    const refused = await pushWhileTemporalDown({
      json: { account_id: customer.current, amount: money(10_000), mobile_number: customer.phone },
      headers: customer.headers,
    });
    assertUnavailable(refused);
    assert.deepEqual(await stored(customer.current), []);
  });

  it('Temporal down: a keyed push is 503 and keeps its PENDING transaction, which the same request sent again starts', async () => {
    const customer = await newCustomer();
    const push = {
      json: { account_id: customer.current, amount: money(10_000), mobile_number: customer.phone },
      headers: { ...customer.headers, 'Idempotency-Key': randomUUID() },
    };
    assertUnavailable(await pushWhileTemporalDown(push));
    const kept = await stored(customer.current);
    assert.equal(kept.length, 1);
    assert.equal(kept[0]!.status, 'PENDING');
    const accepted = await call('POST', '/v1/transactions/mobilemoney/stk-push', push);
    assert.equal(accepted.status, 201, accepted.text);
    assert.equal(accepted.body.id, kept[0]!.id);
    await until(
      'the push settled by its run',
      async () => (await stored(customer.current))[0]!.status !== 'PENDING',
      30_000,
    );
  });
});

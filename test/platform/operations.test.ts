import { strict as assert } from 'node:assert';
import { Client, Connection } from '@temporalio/client';
import { buildApp } from '../../api/app';
import { startApi } from '../../api/server';
import { createDb } from '../../db/knex';
import { harness } from '../support/harness';
import { call } from '../support/http';
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

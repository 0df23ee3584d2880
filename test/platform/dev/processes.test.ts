import { strict as assert } from 'node:assert';
import { generateServiceSigningKey } from '../../../api/auth/service-keys';
import { freePort } from '../../support/ports';
import { spawnService } from '../../support/processes';

let signingKey = '';
before(async () => {
  signingKey = JSON.stringify(await generateServiceSigningKey());
});

describe('production entry points: npm run api and npm run worker', () => {
  it('the worker runs against an existing Temporal and Postgres and stops gracefully on SIGTERM', async function () {
    this.timeout(90_000);
    const metricsPort = await freePort();
    const worker = spawnService('worker/main.ts', {
      SERVICE_SIGNING_KEY: signingKey,
      WORKER_METRICS_PORT: String(metricsPort),
      TEMPORAL_TASK_QUEUE: `entry-${metricsPort}`,
    });
    const { exited } = worker;
    try {
      await worker.waitFor(/worker running/, 60_000);
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      assert.equal(metrics.status, 200, 'the SDK runtime serves Prometheus metrics');
      worker.child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0, worker.output());
      assert.match(worker.output(), /worker stopped/);
      for (const line of worker
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{')))
        JSON.parse(line);
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    }
  });

  it('the API applies migrations, answers /readyz and stops on SIGTERM', async function () {
    this.timeout(60_000);
    const port = await freePort();
    const api = spawnService('api/server.ts', { SERVICE_SIGNING_KEY: signingKey, PORT: String(port) });
    const { exited } = api;
    try {
      await api.waitFor(/api listening/, 45_000);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      assert.equal(ready.status, 200);
      api.child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0, api.output());
    } finally {
      if (api.child.exitCode === null) api.child.kill('SIGKILL');
    }
  });
});

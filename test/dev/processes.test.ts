import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { mobileMoneySettings } from '../../dev/simulators';
import { harness } from '../support/harness';
import { freePort } from '../support/ports';

const ROOT = path.resolve(__dirname, '../..');

let signingKey = '';
before(async () => {
  signingKey = JSON.stringify(await generateServiceSigningKey());
});

/** Spawns one of the production entry points against the harness's Postgres and Temporal. */
function spawnEntry(entry: string, extraEnv: Record<string, string>) {
  const { databaseUrl, env, config } = harness();
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), [entry], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: env.address,
      LOG_LEVEL: 'info',
      AUTH_JWKS_URL: config.AUTH_JWKS_URL!,
      AUTH_ISSUER: config.AUTH_ISSUER!,
      SERVICE_SIGNING_KEY: signingKey,
      KYC_PROVIDER_URL: config.KYC_PROVIDER_URL!,
      KYC_PARTNER_ID: config.KYC_PARTNER_ID!,
      KYC_API_KEY: config.KYC_API_KEY!,
      ...mobileMoneySettings(config.MOBILE_MONEY_URL!),
      ...extraEnv,
    },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const waitFor = async (pattern: RegExp, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(output)) {
      if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}:\n${output}`);
      if (Date.now() > deadline) throw new Error(`${entry}: no ${pattern} within ${timeoutMs} ms:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return { child, waitFor, output: () => output };
}

describe('production entry points: npm run api and npm run worker', () => {
  it('the worker runs against an existing Temporal and Postgres and stops gracefully on SIGTERM', async function () {
    this.timeout(90_000);
    const metricsPort = await freePort();
    const worker = spawnEntry('worker/main.ts', { WORKER_METRICS_PORT: String(metricsPort), TEMPORAL_TASK_QUEUE: `entry-${metricsPort}` });
    const exited = once(worker.child, 'exit');
    try {
      await worker.waitFor(/worker running/, 60_000);
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      assert.equal(metrics.status, 200, 'the SDK runtime serves Prometheus metrics');
      worker.child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0, worker.output());
      assert.match(worker.output(), /worker stopped/);
      for (const line of worker.output().split('\n').filter((l) => l.startsWith('{'))) JSON.parse(line);
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    }
  });

  it('the API applies migrations, answers /readyz and stops on SIGTERM', async function () {
    this.timeout(60_000);
    const port = await freePort();
    const api = spawnEntry('api/server.ts', { PORT: String(port) });
    const exited = once(api.child, 'exit');
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

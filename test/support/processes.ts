import { once } from 'node:events';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { currentAccountSettings, mobileMoneySettings } from '../../dev/simulators';
import { harness } from './harness';
import { freePort } from './ports';

const ROOT = path.resolve(__dirname, '../..');

/**
 * One of the production entry points (api/server.ts, worker/main.ts) as its own process against
 * the harness's Postgres, Temporal, API (provider callbacks) and simulators. Node runs it with
 * the tsx loader and no tsx CLI in between, so a signal (SIGKILL too) reaches the service itself.
 */
export function spawnService(entry: string, extraEnv: Record<string, string>) {
  const { databaseUrl, env, config } = harness();
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), entry], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: env.address,
      PUBLIC_BASE_URL: config.PUBLIC_BASE_URL!,
      LOG_LEVEL: 'info',
      // The harness's worker owns the schedules: a spawned one must not draw them to its queue.
      WORKER_SCHEDULES: 'false',
      AUTH_JWKS_URL: config.AUTH_JWKS_URL!,
      AUTH_ISSUER: config.AUTH_ISSUER!,
      KYC_PROVIDER_URL: config.KYC_PROVIDER_URL!,
      KYC_PARTNER_ID: config.KYC_PARTNER_ID!,
      KYC_API_KEY: config.KYC_API_KEY!,
      // The simulator's TLS certificate and storage host: a v2 zip upload goes there.
      ...(config.KYC_PROVIDER_CA && { KYC_PROVIDER_CA: config.KYC_PROVIDER_CA }),
      ...(config.KYC_UPLOAD_HOSTS && { KYC_UPLOAD_HOSTS: config.KYC_UPLOAD_HOSTS.join(',') }),
      ...mobileMoneySettings(config.MOBILE_MONEY_URL!),
      ...(config.OBJECT_STORE_ENDPOINT && {
        OBJECT_STORE_ENDPOINT: config.OBJECT_STORE_ENDPOINT,
        OBJECT_STORE_ACCESS_KEY_ID: config.OBJECT_STORE_ACCESS_KEY_ID!,
        OBJECT_STORE_SECRET_ACCESS_KEY: config.OBJECT_STORE_SECRET_ACCESS_KEY!,
        OBJECT_STORE_FORCE_PATH_STYLE: 'true',
      }),
      ...currentAccountSettings({
        sms: config.SMS_PROVIDER_URL,
        email: config.EMAIL_PROVIDER_URL,
        bank: config.BANK_URL,
      }),
      ...extraEnv,
    },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit');
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    exited,
    output: () => output,
    /** Resolves once the output matches; rejects when the process ends or the time is up. */
    async waitFor(pattern: RegExp, timeoutMs: number) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output)) {
        if (ended()) throw new Error(`${entry} exited (${child.exitCode ?? child.signalCode}):\n${output}`);
        if (Date.now() > deadline) throw new Error(`${entry}: no ${pattern} within ${timeoutMs} ms:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    /** SIGTERM, then SIGKILL if it has not stopped within 10 s. */
    async stop() {
      if (ended()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** worker/main.ts as its own process on a task queue of its own (a test kills and restarts it). */
export async function spawnWorker(taskQueue: string, signingKey: string) {
  const worker = spawnService('worker/main.ts', {
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKER_METRICS_PORT: String(await freePort()),
    WORKER_SHUTDOWN_GRACE: '1s',
    SERVICE_SIGNING_KEY: signingKey,
    WORKFLOW_BUNDLE_PATH: harness().workflowBundlePath,
  });
  return { ...worker, running: (timeoutMs = 60_000) => worker.waitFor(/worker running/, timeoutMs) };
}

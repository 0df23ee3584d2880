import type { ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { generateServiceSigningKey } from '../api/auth/service-keys';
import type { Config } from '../config';
import { startTemporalDevServer } from '../dev/temporal-server';
import { freePort } from '../test/support/ports';
import { startServer, startService, stopProcess } from './lib';

/**
 * The service as deployed, for the end-to-end benchmarks: a Temporal dev server, the API
 * (api/server.ts) and the worker (worker/main.ts) each in its own process on `taskQueue`, and
 * (unless `baseline` is false) a bare worker (servers/trivial-worker.ts, task queue
 * `bench-trivial`) for the baselines. What it
 * starts is stopped by `cleanups`, last first.
 */
export async function startDeployed(options: {
  databaseUrl: string;
  config: Config;
  cliPath: string | undefined;
  taskQueue: string;
  /** A Temporal server the caller runs (the restarts suite stops and starts its own); a dev server is started otherwise. */
  temporalAddress?: string;
  /** Dynamic config of the dev server started here (see DevServerOptions). */
  temporalDynamicConfig?: Record<string, unknown>;
  /** The address clients and providers' callbacks reach the API at (a proxy in front); the API's own otherwise. */
  publicUrl?: string;
  /** Start the bare worker the baselines run on (task queue `bench-trivial`); true unless a suite has no baseline. */
  baseline?: boolean;
  /** The providers' settings the processes get (mobileMoneySettings, currentAccountSettings...). */
  providerEnv: Record<string, string>;
  cleanups: (() => Promise<unknown>)[];
}): Promise<{
  client: Client;
  temporalAddress: string;
  apiUrl: string;
  env: NodeJS.ProcessEnv;
  api: ChildProcess;
  worker: ChildProcess;
}> {
  const { config, cleanups } = options;
  let temporalAddress = options.temporalAddress;
  if (!temporalAddress) {
    const temporalServer = await startTemporalDevServer({
      cliPath: options.cliPath,
      dynamicConfig: options.temporalDynamicConfig,
    });
    cleanups.push(() => temporalServer.teardown());
    temporalAddress = temporalServer.address;
  }
  const connection = await Connection.connect({ address: temporalAddress });
  cleanups.push(() => connection.close());
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: options.databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: options.publicUrl ?? apiUrl,
    AUTH_JWKS_URL: config.AUTH_JWKS_URL,
    AUTH_ISSUER: config.AUTH_ISSUER,
    SERVICE_SIGNING_KEY: JSON.stringify(await generateServiceSigningKey()),
    KYC_PROVIDER_URL: config.KYC_PROVIDER_URL,
    KYC_PARTNER_ID: config.KYC_PARTNER_ID,
    KYC_API_KEY: config.KYC_API_KEY,
    ...options.providerEnv,
    // High enough never to refuse: the benchmarks measure the work, not the limits.
    RATE_LIMIT_CALLER_POINTS: '1000000000',
    RATE_LIMIT_ORGANIZATION_POINTS: '1000000000',
    // Every callback comes from this machine's address, some of them many times over (the chaos
    // suites): at 40 pushes a second they outran the per-source budget (600 a minute), were
    // refused with 429 and never sent again, and their pushes waited for the status query.
    RATE_LIMIT_CALLBACK_POINTS: '1000000000',
    WORKER_METRICS_PORT: String(await freePort()),
  };
  const api = await startService('api/server.ts', env, /api listening/);
  cleanups.push(() => stopProcess(api));
  const worker = await startService('worker/main.ts', env, /worker running/);
  cleanups.push(() => stopProcess(worker));
  if (options.baseline !== false) {
    const trivial = await startServer<{ ready: boolean }>('trivial-worker.ts', {
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: 'bench-trivial',
    });
    cleanups.push(() => stopProcess(trivial.child));
  }
  return { client: new Client({ connection }), temporalAddress, apiUrl, env, api, worker };
}

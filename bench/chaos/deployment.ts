import type { ChildProcess } from 'node:child_process';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { createLogger } from '../../config/logger';
import { withDatabase } from '../../db/knex';
import { DEMO } from '../../db/seeds/demo';
import { loadDevConfig } from '../../dev/config';
import { devSeedOptions, grantDemoMerchantOverHttp, withDevIdentityProvider } from '../../dev/identity';
import { startRoundRobin } from '../../dev/round-robin';
import { currentAccountSettings, mobileMoneySettings } from '../../dev/simulators';
import { requestToken, startIdentityProvider } from '../../simulators/identity';
import { freePort } from '../../test/support/ports';
import { installRuntime } from '../../worker/runtime';
import { benchDatabase, demoDatabase } from '../database';
import { startDeployed } from '../deployed';
import { startServer, startService, stopProcess } from '../lib';
import { restartableTemporalServer } from './dependencies';
import { workflowBundleFile } from './replay';

/**
 * The service in its deployment shape for the chaos suites: Postgres (a fresh database), a
 * Temporal dev server, the API, `workers` worker processes on one task queue, and each provider
 * simulator (mobile money, KYC, SMS gateway, bank) in a process of its own; only the development
 * identity provider that signs the clients' tokens runs in the suite's process. Workers can be
 * killed and started again (`workers`). What it starts is stopped by `cleanups`, last first.
 *
 * With `cluster` (issue 32, `npm run chaos -- --cluster`) it is the production topology instead,
 * as `npm run cluster` runs it: the real Temporal server on that Postgres (unless the suite brings
 * its own), CHAOS_CLUSTER_APIS API processes (2) behind the round-robin proxy, which is then the
 * API's address for clients and providers' callbacks alike, and at least two workers.
 */

/** The KYC simulator's partner credentials in these runs (development only, never real). */
const KYC = { partnerId: '2101', apiKey: 'chaos-kyc-api-key-not-a-secret' };

/**
 * Provider waits shortened so that a run that lost its trigger (a callback that found no worker,
 * a status still pending) settles by its own fallback within a chaos run's deadline, as it would
 * in production, only sooner. Each can be overridden through `env`.
 */
const CHAOS_TIMINGS: Record<string, string> = {
  STK_PUSH_CALLBACK_WAIT: '20s',
  STK_PUSH_QUERY_INTERVAL: '5s',
  STK_PUSH_QUERY_DEADLINE: '3m',
  SEND_MONEY_RESULT_WAIT: '3m',
  SEND_MONEY_STATUS_QUERY_AFTER: '20s',
  SEND_MONEY_STATUS_QUERY_INTERVAL: '10s',
  KYC_CALLBACK_WAIT: '20s',
  BANK_STATUS_POLL_INTERVAL: '5s',
  // Codes outlive the kills' delays: a late confirmation is still the right code.
  OTP_TTL: '15m',
  WORKER_SHUTDOWN_GRACE: '1s',
  // API and workers share the Postgres server with other suites on this machine.
  DATABASE_POOL_MAX: '5',
};

/** How each suite is run: `npm run chaos -- [--bounded] [--cluster]`. */
export interface SuiteOptions {
  bounded: boolean;
  /** The production topology (see startChaosDeployment) instead of a dev server and one API. */
  cluster?: boolean;
}

/** The options a suite's own command line gives (`tsx bench/chaos/restarts.ts --bounded --cluster`). */
export const suiteOptionsOf = (argv: string[]): SuiteOptions => ({
  bounded: argv.includes('--bounded'),
  cluster: argv.includes('--cluster'),
});

/** Processes of one entry point (workers, or API instances), one per slot. */
export interface ProcessPool {
  /** How many processes run (one per slot). */
  readonly size: number;
  /** SIGKILLs the process in `slot` (no shutdown, no goodbye) and waits until it is gone. */
  kill(slot: number): Promise<void>;
  /** Starts a new process in `slot`, resolving once it is ready (a worker polls, an API listens). */
  start(slot: number): Promise<void>;
  /** Every process started so far, killed or not (for CPU and exit accounting). */
  readonly started: number;
}

export interface ChaosDeployment {
  db: Knex;
  databaseUrl: string;
  apiUrl: string;
  temporal: Client;
  /** The simulators' base URLs (each in its own process; `/_control` is their control API). */
  simulators: { mobileMoney: string; kyc: string; sms: string; bank: string; email?: string };
  workers: ProcessPool;
  /** The API instances: one, or CHAOS_CLUSTER_APIS behind `apiUrl` in the cluster topology. */
  apis: ProcessPool;
  /** Each API instance's own address (its /metrics are its own). */
  apiInstanceUrls: string[];
  /** A backend bearer token for one of the demo organization's users, as a client app holds. */
  token(userId: string): Promise<string>;
  organizationId: string;
  /** API and worker processes that exited without being told to (by `workers.kill` or at cleanup): 0 expected. */
  unexpectedExits(): number;
}

/**
 * The SDK's runtime of the suite's own process (its dev server, the replay of every history) logs
 * warnings and errors only: the replayer's worker would print its start and stop among the figures.
 */
function quietRuntime() {
  try {
    installRuntime({ logger: createLogger('warn'), shutdownSignals: [] });
  } catch {
    // Made already by an earlier suite of this process.
  }
}

export async function startChaosDeployment(options: {
  workers: number;
  taskQueue: string;
  /** Settings for the API and the workers beyond (or instead of) CHAOS_TIMINGS. */
  env?: Record<string, string>;
  /** A Postgres server of the suite's own (admin URL) for the fresh database; DATABASE_URL's (or an embedded one) otherwise. */
  adminUrl?: string;
  /** A Temporal server of the suite's own; a dev server is started otherwise. */
  temporalAddress?: string;
  /** Dynamic config of that dev server (the handlers suite has runs continue as new early). */
  temporalDynamicConfig?: Record<string, unknown>;
  /** Also the e-mail provider's simulator (e-mail verification); without it those routes answer 503. */
  email?: boolean;
  /** The production topology (above). */
  cluster?: boolean;
  cleanups: (() => Promise<unknown>)[];
}): Promise<ChaosDeployment> {
  const { cleanups } = options;
  quietRuntime();
  const base = loadDevConfig({ ...process.env, LOG_LEVEL: 'info' });
  const simulator = async <T>(script: string, which: string, env: NodeJS.ProcessEnv = {}) => {
    const started = await startServer<T>(script, { BENCH_SIMULATOR: which, ...env });
    cleanups.push(() => stopProcess(started.child));
    return started.info;
  };
  const idp = await startIdentityProvider({ partnerIssuer: DEMO.partner.issuer });
  cleanups.push(() => idp.close());
  await grantDemoMerchantOverHttp(idp);
  // The simulators start while the database is made, migrated and seeded.
  const [mobileMoney, kyc, sms, bank, email, { databaseUrl, db }] = await Promise.all([
    simulator<{ url: string; certificate: string }>('simulator.ts', 'mobile-money'),
    simulator<{ url: string; certificate: string }>('simulator.ts', 'kyc', {
      KYC_PARTNER_ID: KYC.partnerId,
      KYC_API_KEY: KYC.apiKey,
    }),
    simulator<{ url: string }>('current-account-simulator.ts', 'sms'),
    simulator<{ url: string }>('current-account-simulator.ts', 'bank'),
    options.email ? simulator<{ url: string }>('current-account-simulator.ts', 'email') : undefined,
    (async () => {
      const url = await benchDatabase(options.adminUrl ?? base.DATABASE_URL, cleanups);
      return { databaseUrl: url, db: await demoDatabase(url, devSeedOptions(idp), cleanups) };
    })(),
  ]);
  const config = {
    ...withDevIdentityProvider(base, idp),
    KYC_PROVIDER_URL: kyc.url,
    KYC_PARTNER_ID: KYC.partnerId,
    KYC_API_KEY: KYC.apiKey,
  };

  const cluster = options.cluster ?? false;
  let temporalAddress = options.temporalAddress;
  if (cluster && !temporalAddress) {
    temporalAddress = (await restartableTemporalServer(withDatabase(databaseUrl, 'postgres'), cleanups)).address;
  }
  // The API instances' addresses, one per slot, fixed: a restarted instance listens where it did.
  const apiInstanceUrls: string[] = [];
  const proxy = cluster ? await startRoundRobin(() => apiInstanceUrls, '127.0.0.1', await freePort()) : undefined;
  if (proxy) cleanups.push(() => proxy.close());

  const deployed = await startDeployed({
    databaseUrl,
    config,
    cliPath: base.TEMPORAL_CLI_PATH,
    temporalAddress,
    publicUrl: proxy?.url,
    temporalDynamicConfig: options.temporalDynamicConfig,
    taskQueue: options.taskQueue,
    baseline: false,
    providerEnv: {
      WORKFLOW_BUNDLE_PATH: await workflowBundleFile(),
      ...mobileMoneySettings(mobileMoney.url, mobileMoney.certificate),
      ...currentAccountSettings({ sms: sms.url, bank: bank.url, email: email?.url }),
      // The v2 upload goes to the KYC simulator's TLS storage listener, by this name.
      KYC_PROVIDER_CA: kyc.certificate,
      KYC_UPLOAD_HOSTS: 'localhost',
      ...CHAOS_TIMINGS,
      // The suites' webhook receiver simulator listens on loopback.
      WEBHOOK_ALLOWED_ADDRESSES: 'loopback',
      // Behind the proxy, the client's address is the one X-Forwarded-For carries (as npm run cluster).
      ...(cluster ? { TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '1' } : {}),
      ...options.env,
    },
    cleanups,
  });
  apiInstanceUrls.push(deployed.apiUrl);

  // A process that exits on its own (a lost connection it did not survive) counts; a kill does not.
  let unexpectedExits = 0;
  const told = new WeakSet<ChildProcess>();
  const watched = (child: ChildProcess) => {
    child.once('exit', () => {
      if (!told.has(child)) unexpectedExits++;
    });
    return child;
  };
  /** A pool whose slot 0 is `first`, the others started by `startOne(slot)`; all stopped by `cleanups`. */
  const pool = async (first: ChildProcess, size: number, startOne: (slot: number) => Promise<ChildProcess>) => {
    const slots: ChildProcess[] = [watched(first)];
    let started = 1;
    const startIn = async (slot: number) => {
      started++;
      return watched(await startOne(slot));
    };
    // Stopped at cleanup whatever else failed to start (each one is in `slots` once it is up).
    cleanups.push(() => Promise.all(slots.map((child) => stopProcess(child))));
    await Promise.all(
      Array.from({ length: size - 1 }, async (_, i) => {
        slots[i + 1] = await startIn(i + 1);
      }),
    );
    const processes: ProcessPool = {
      size,
      get started() {
        return started;
      },
      async kill(slot) {
        const victim = slots[slot]!;
        if (victim.exitCode !== null || victim.signalCode !== null) return;
        const gone = new Promise((resolve) => victim.once('exit', resolve));
        told.add(victim);
        victim.kill('SIGKILL');
        await gone;
      },
      async start(slot) {
        slots[slot] = await startIn(slot);
      },
    };
    return processes;
  };
  const workers = await pool(deployed.worker, cluster ? Math.max(2, options.workers) : options.workers, async () =>
    startService(
      'worker/main.ts',
      { ...deployed.env, WORKER_METRICS_PORT: String(await freePort()) },
      /worker running/,
    ),
  );
  const apiCount = cluster ? Number(process.env.CHAOS_CLUSTER_APIS ?? 2) : 1;
  for (let slot = 1; slot < apiCount; slot++) apiInstanceUrls.push(`http://127.0.0.1:${await freePort()}`);
  const apis = await pool(deployed.api, apiCount, (slot) =>
    startService('api/server.ts', { ...deployed.env, PORT: new URL(apiInstanceUrls[slot]!).port }, /api listening/),
  );

  return {
    db,
    databaseUrl,
    apiUrl: proxy?.url ?? deployed.apiUrl,
    temporal: deployed.client,
    simulators: { mobileMoney: mobileMoney.url, kyc: kyc.url, sms: sms.url, bank: bank.url, email: email?.url },
    workers,
    apis,
    apiInstanceUrls,
    token: (userId) => requestToken(idp.url, 'backend', { sub: userId, aud: config.AUTH_AUDIENCE }),
    organizationId: DEMO.organizations.demo.id,
    unexpectedExits: () => unexpectedExits,
  };
}

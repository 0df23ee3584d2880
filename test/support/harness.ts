import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundle } from '@temporalio/worker';
import { buildApp } from '../../api/app';
import type { AnyRoute } from '../../api/route';
import { generateServiceSigningKey, loadServiceKeys } from '../../api/auth/service-keys';
import { startApi, type RunningApi } from '../../api/server';
import type { AppDeps } from '../../api/deps';
import { type Config, loadConfig } from '../../config';
import { createLogger, type Logger } from '../../config/logger';
import { createDb, dropDatabase, ensureDatabase, type Knex, migrate } from '../../db/knex';
import { seedDemoData } from '../../db/seeds/demo';
import { loadDevConfig } from '../../dev/config';
import { startDevelopmentProviders } from '../../dev/simulators';
import type { RunningKycSimulator } from '../../simulators/kyc';
import type { RunningMobileMoneySimulator } from '../../simulators/mobile-money';
import type { RunningIdentityProvider } from '../../simulators/identity';
import type { RunningWebhookReceiver } from '../../simulators/webhook-receiver';
import { startEmbeddedPostgres } from '../../dev/embedded-postgres';
import { findTemporalCli } from '../../dev/temporal-cli';
import { startTemporalDevServer } from '../../dev/temporal-server';
import { systemClock } from '../../domain/clock';
import { createProviders } from '../../providers';
import { bundleWorkflows } from '../../worker/bundle';
import { installRuntime } from '../../worker/runtime';
import { ensureSchedules } from '../../worker/schedules/index';
import { createWorker, type ServiceWorker } from '../../worker/worker';
import { freePort } from './ports';
import { createTestActivities } from './test-activities';
import { testRoutes } from './test-routes';

/**
 * The shared parts of one test run: one fresh Postgres database (on DATABASE_URL's server, or
 * an embedded PostgreSQL), one Temporal dev server, one workflow bundle, one worker, and the
 * API on an ephemeral port. Started once by the root hooks in test/setup.ts.
 */
export interface Harness {
  config: Config;
  logger: Logger;
  /** Admin URL of the Postgres server the run uses, and the run's own database on it. */
  adminUrl: string;
  databaseUrl: string;
  db: Knex;
  temporalCliPath?: string;
  env: TestWorkflowEnvironment;
  client: Client;
  taskQueue: string;
  workflowBundle: WorkflowBundle;
  /** The same bundle in a file, for the worker processes tests spawn (WORKFLOW_BUNDLE_PATH): up seconds sooner. */
  workflowBundlePath: string;
  worker: ServiceWorker;
  api: RunningApi;
  baseUrl: string;
  deps: AppDeps;
  /** The development identity provider: tokens for the seeded users. */
  idp: RunningIdentityProvider;
  /** The identity-verification provider simulator (its /_control API). */
  kyc: RunningKycSimulator;
  mobileMoney: RunningMobileMoneySimulator;
  /** A client app's webhook receiver, verifying deliveries with the standardwebhooks package. */
  webhookReceiver: RunningWebhookReceiver;
  /** Every route the test API serves: the service's own and the test-only ones. */
  routes: readonly AnyRoute[];
}

/** Durations are configuration: tests run them in seconds. */
const TEST_ENV: Record<string, string> = {
  NODE_ENV: 'test',
  KYC_SUBMISSION_WINDOW: '2s',
  KYC_CALLBACK_WAIT: '3s',
  KYC_STATUS_STALE_AFTER: '500ms',
  KYC_STATUS_RECOVERY_TIMEOUT: '2s',
  KYC_EXPIRY_SWEEP_INTERVAL: '5s',
  STK_PUSH_CALLBACK_WAIT: '2s',
  STK_PUSH_QUERY_INTERVAL: '500ms',
  STK_PUSH_QUERY_DEADLINE: '6s',
  SEND_MONEY_RESULT_WAIT: '4s',
  SEND_MONEY_STATUS_QUERY_AFTER: '2s',
  SEND_MONEY_STATUS_QUERY_INTERVAL: '1s',
  LOAN_DAY_LENGTH: '1s',
  OTP_TTL: '4s',
  OTP_RESEND_COOLDOWN: '2s',
  ACTIVATION_TTL: '12s',
  PHONE_CHANGE_TTL: '10s',
  EMAIL_VERIFICATION_TTL: '6s',
  BANK_STATUS_POLL_INTERVAL: '300ms',
  BANK_DECISION_DEADLINE: '8s',
  DOCUMENT_UPLOAD_GRACE: '2s',
  EXTRACTION_DEADLINE: '5s',
  WORKER_SHUTDOWN_GRACE: '2s',
  IDEMPOTENCY_WAIT: '2s',
  READINESS_TIMEOUT: '1s',
  RATE_LIMIT_MEMORY: 'true',
  RATE_LIMIT_CALLER_POINTS: '100000',
  RATE_LIMIT_ORGANIZATION_POINTS: '100000',
  RATE_LIMIT_AUTH_FAILURE_POINTS: '100000',
  RATE_LIMIT_CALLBACK_POINTS: '100000',
  AUTH_JWKS_CACHE_MAX_AGE: '1s',
  AUTH_JWKS_COOLDOWN: '1ms',
  AUTH_CALLER_CACHE_TTL: '1s',
  WEBHOOK_RETRY_INITIAL: '200ms',
  WEBHOOK_RETRY_MAX_INTERVAL: '1s',
  WEBHOOK_RETRY_WINDOW: '15s',
  // Above the deliveries suite's slow receiver (3 s): slow, but answered within the timeout.
  WEBHOOK_TIMEOUT: '5s',
  WEBHOOK_DISABLE_AFTER: '4s',
};

let current: Harness | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

/** Whether the shared harness runs (npm test) or not (npm run test:unit). */
export const harnessRunning = () => current !== undefined;

export function harness(): Harness {
  if (!current) throw new Error('the test harness is not started (test/setup.ts starts it)');
  return current;
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({ LOG_LEVEL: 'silent', ...process.env, ...TEST_ENV, ...overrides });
}

async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await work();
  if (process.env.HARNESS_TIMINGS) console.error(`  harness: ${name} ${Date.now() - started} ms`);
  return result;
}

export async function startHarness(): Promise<Harness> {
  const simulators = await startDevelopmentProviders(testConfig(), {
    objectStore: { binary: loadDevConfig({ ...process.env, ...TEST_ENV }).OBJECT_STORE_BIN },
  });
  cleanups.push(() => simulators.close());
  const { config, idp } = simulators;
  const logger = createLogger(config.LOG_LEVEL);
  const log = (line: string) => console.error(line);
  installRuntime({ logger });

  const [adminUrl, temporalCliPath, workflowBundle] = await Promise.all([
    step('postgres', async () => {
      if (config.DATABASE_URL) return config.DATABASE_URL;
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'lending-test-pg-'));
      const pg = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false, log });
      cleanups.push(async () => {
        await pg.stop();
        await rm(dataDir, { recursive: true, force: true });
      });
      return pg.url;
    }),
    step('temporal cli', () =>
      findTemporalCli({ explicitPath: loadDevConfig({ ...process.env, ...TEST_ENV }).TEMPORAL_CLI_PATH, log }),
    ),
    step('bundle', () => bundleWorkflows(require.resolve('../fixtures/workflows'))),
  ]);

  const bundleDir = await mkdtemp(path.join(os.tmpdir(), 'lending-test-bundle-'));
  cleanups.push(() => rm(bundleDir, { recursive: true, force: true }));
  const workflowBundlePath = path.join(bundleDir, 'workflows.js');
  await writeFile(workflowBundlePath, workflowBundle.code);

  const databaseName = `lending_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const databaseUrl = await ensureDatabase(adminUrl, databaseName);
  cleanups.push(() => dropDatabase(adminUrl, databaseName));
  const db = createDb(databaseUrl, config.DATABASE_POOL_MAX, logger);
  cleanups.push(() => db.destroy());
  await step('migrate', async () => {
    await migrate(db);
    await seedDemoData(db, simulators.seedOptions);
  });

  const env = await step('temporal', () => startTemporalDevServer({ cliPath: temporalCliPath, log }));
  cleanups.push(() => env.teardown());

  const taskQueue = `test-${randomBytes(4).toString('hex')}`;
  const runConfig: Config = { ...config, DATABASE_URL: databaseUrl, TEMPORAL_TASK_QUEUE: taskQueue };
  const providers = createProviders(config);
  const serviceKeys = await loadServiceKeys(JSON.stringify(await generateServiceSigningKey()));
  const deps: AppDeps = {
    config: runConfig,
    db,
    temporal: env.client,
    providers,
    logger,
    clock: systemClock,
    serviceKeys,
  };
  // The API first: providers call it back, so the worker's activities need its address.
  const built = buildApp(deps, { extraRoutes: testRoutes() });
  const api = await startApi(built, '127.0.0.1', 0);
  runConfig.PUBLIC_BASE_URL = api.url;
  const worker = await createWorker(
    {
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle,
      shutdownGraceTimeMs: runConfig.WORKER_SHUTDOWN_GRACE,
      extraActivities: createTestActivities(db),
    },
    deps,
  );
  const running = worker.run();
  await ensureSchedules(env.client, runConfig);
  cleanups.push(async () => {
    worker.shutdown();
    await running;
  });

  cleanups.push(() => api.close()); // closed first: no request reaches a stopping worker

  current = {
    config: runConfig,
    logger,
    adminUrl,
    databaseUrl,
    db,
    temporalCliPath,
    env,
    client: env.client,
    taskQueue,
    workflowBundle,
    workflowBundlePath,
    worker,
    api,
    baseUrl: api.url,
    deps,
    idp,
    kyc: simulators.kyc!,
    mobileMoney: simulators.mobileMoney!,
    webhookReceiver: simulators.webhookReceiver,
    routes: built.routes,
  };
  return current;
}

/** Stops everything in reverse order of start, and waits for each part. */
export async function stopHarness(): Promise<void> {
  current = undefined;
  while (cleanups.length > 0) {
    const cleanup = cleanups.pop()!;
    await cleanup().catch((error) => console.error('harness teardown:', error));
  }
}

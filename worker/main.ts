import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../config';
import { createLogger } from '../config/logger';
import { temporalConnectionOptions } from '../config/temporal';
import { createDb } from '../db/knex';
import { systemClock } from '../domain/clock';
import { createProviders } from '../providers';
import { workerBundle } from './bundle';
import { installRuntime } from './runtime';
import { ensureSchedules } from './schedules/index';
import { createWorker } from './worker';

/**
 * `npm run worker`: the worker alone, against DATABASE_URL and TEMPORAL_ADDRESS (production
 * shape). The SDK's runtime exposes its own metrics for Prometheus on WORKER_METRICS_PORT and
 * turns SIGINT/SIGTERM into a graceful shutdown: polling stops, in-flight tasks finish within
 * WORKER_SHUTDOWN_GRACE, then run() resolves.
 */
async function main() {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  if (!config.DATABASE_URL)
    throw new Error('DATABASE_URL is required to run the worker on its own (npm start runs everything)');
  installRuntime({ logger, metricsBindAddress: `0.0.0.0:${config.WORKER_METRICS_PORT}` });
  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger);
  const options = temporalConnectionOptions(config);
  const connection = await NativeConnection.connect({ address: options.address });
  const clientConnection = await Connection.connect(options);
  const temporal = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE });
  if (config.WORKER_SCHEDULES) await ensureSchedules(temporal, config);
  const worker = await createWorker(
    {
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowBundle: await workerBundle(config.WORKFLOW_BUNDLE_PATH),
      shutdownGraceTimeMs: config.WORKER_SHUTDOWN_GRACE,
    },
    { config, db, providers: createProviders(config), logger, clock: systemClock, temporal },
  );
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  try {
    await worker.run();
  } finally {
    await Promise.all([db.destroy(), connection.close(), clientConnection.close()]);
    logger.info('worker stopped');
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

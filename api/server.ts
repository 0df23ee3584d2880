import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../config';
import { createLogger } from '../config/logger';
import { temporalConnectionOptions } from '../config/temporal';
import { createDb, migrate } from '../db/knex';
import { systemClock } from '../domain/clock';
import { createProviders } from '../providers';
import { type BuiltApp, buildApp } from './app';
import { answerClientErrors } from './client-errors';
import { loadServiceKeys } from './auth/service-keys';
import type { AppDeps } from './deps';

export interface RunningApi {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Serves a built app on host:port (0 picks a free port) until close() is called. */
export async function startApi(
  built: Pick<BuiltApp, 'app' | 'close'>,
  host: string,
  port: number,
): Promise<RunningApi> {
  const server = built.app.listen(port, host);
  answerClientErrors(server);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  return {
    server,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      await built.close();
    },
  };
}

/** `npm run api`: the API alone, against DATABASE_URL and TEMPORAL_ADDRESS (production shape). */
async function main() {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  if (!config.DATABASE_URL)
    throw new Error('DATABASE_URL is required to run the API on its own (npm start runs everything)');
  if (!config.SERVICE_SIGNING_KEY)
    throw new Error('SERVICE_SIGNING_KEY is required to run the API on its own (npm start makes one)');
  if (!config.AUTH_JWKS_URL || !config.AUTH_ISSUER)
    throw new Error('AUTH_JWKS_URL and AUTH_ISSUER are required to run the API on its own');
  const serviceKeys = await loadServiceKeys(config.SERVICE_SIGNING_KEY);
  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger);
  await migrate(db);
  const connection = await Connection.connect(temporalConnectionOptions(config));
  const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const deps: AppDeps = {
    config,
    db,
    temporal,
    providers: createProviders(config),
    logger,
    clock: systemClock,
    serviceKeys,
  };
  const api = await startApi(buildApp(deps), config.HOST, config.PORT);
  logger.info({ url: api.url }, 'api listening');
  const stop = async (signal: string) => {
    logger.info({ signal }, 'api stopping');
    await api.close();
    await Promise.all([db.destroy(), connection.close()]);
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}

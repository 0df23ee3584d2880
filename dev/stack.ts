import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../config/logger';
import { createDb, ensureDatabase, migrate } from '../db/knex';
import type { DevConfig } from './config';
import { startEmbeddedPostgres } from './embedded-postgres';
import { startDevelopmentProviders } from './simulators';

/**
 * What `npm start` and `npm run cluster` both run: the stack of things started (stopped last
 * first), the development providers with the configuration pointed at them, and Postgres.
 */

export type Say = (line: string) => void;

/** What was started, stopped last first, once: on a signal, the parent's death or a failure. */
export function stopStack(logger: Logger, say: Say) {
  const stops: (() => Promise<unknown>)[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const stop of stops.reverse()) {
        await stop().catch((error) => logger.error({ err: error }, 'error while stopping'));
      }
    })());
  return {
    push(stop: () => Promise<unknown>) {
      stops.push(stop);
    },
    stopAll,
    shutdown(reason: string) {
      if (stopping) return;
      say(`${reason}, stopping`);
      void stopAll().then(() => process.exit(0));
    },
    /** Stopping has begun: a failure or the worker's end is then expected. */
    get stopping() {
      return stopping !== undefined;
    },
  };
}
export type Stops = ReturnType<typeof stopStack>;

/** The development identity provider and the simulators, and the configuration pointed at them. */
export async function startProviders(config: DevConfig, say: Say, stops: Stops) {
  // The development identity provider: tokens for the seeded users (npm run token).
  await mkdir(config.DATA_DIR, { recursive: true });
  const providersDev = await startDevelopmentProviders(config, {
    idpPort: config.DEV_IDP_PORT,
    idpKeysFile: path.join(config.DATA_DIR, 'identity-provider-keys.json'),
    kycPort: config.KYC_SIMULATOR_PORT,
    kycTlsPort: config.KYC_SIMULATOR_TLS_PORT,
    mobileMoneyPort: config.MOBILE_MONEY_SIMULATOR_PORT,
    mobileMoneyTlsPort: config.MOBILE_MONEY_SIMULATOR_TLS_PORT,
    smsPort: config.SMS_SIMULATOR_PORT,
    emailPort: config.EMAIL_SIMULATOR_PORT,
    bankPort: config.BANK_SIMULATOR_PORT,
    extractionPort: config.EXTRACTION_SIMULATOR_PORT,
    webhookReceiverPort: config.WEBHOOK_RECEIVER_PORT,
    objectStore: {
      port: config.OBJECT_STORE_PORT,
      dataDir: path.join(config.DATA_DIR, 'object-store'),
      binary: config.OBJECT_STORE_BIN,
      log: (line) => say(line),
    },
  });
  stops.push(() => providersDev.close());
  // Providers call back to the API; PUBLIC_BASE_URL says where it is when not set.
  const pointed: DevConfig = {
    ...config,
    ...providersDev.config,
    PUBLIC_BASE_URL: providersDev.config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`,
  };
  // The simulated gateway posts its delivery reports where the real one would be told to.
  if (providersDev.sms && pointed.SMS_CALLBACK_TOKEN)
    await fetch(`${providersDev.sms.url}/_control/mode`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        deliveryReportUrl: `${pointed.PUBLIC_BASE_URL}/v1/current-account/callbacks/sms/delivery-reports/${pointed.SMS_CALLBACK_TOKEN}`,
      }),
    });
  return { providersDev, config: pointed };
}

/** Postgres (embedded unless DATABASE_URL), migrated; its URL for processes of their own. */
export async function openDatabase(config: DevConfig, logger: Logger, stops: Stops) {
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres({
      dataDir: path.join(config.DATA_DIR, 'postgres'),
      port: config.EMBEDDED_POSTGRES_PORT,
      persistent: true,
      ownSignals: true,
      log: (line) => logger.warn(line),
    });
    stops.push(() => pg.stop());
    databaseUrl = await ensureDatabase(pg.url, 'lending');
  }
  const db = createDb(databaseUrl, config.DATABASE_POOL_MAX, logger);
  stops.push(() => db.destroy());
  await migrate(db);
  return { db, databaseUrl };
}

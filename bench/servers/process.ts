import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import type Koa from 'koa';
import pino from 'pino';
import { buildApp } from '../../api/app';
import { generateServiceSigningKey, loadServiceKeys } from '../../api/auth/service-keys';
import type { Config } from '../../config';
import { createLogger } from '../../config/logger';
import type { Knex } from '../../db/knex';
import { systemClock } from '../../domain/clock';
import { createProviders } from '../../providers';

/** What a bench server undoes when it stops: its database, providers, embedded server. */
export type Cleanups = (() => Promise<unknown>)[];

/**
 * Runs a bench server's `main` as the bench harness expects: on SIGINT or SIGTERM, and on
 * failure, the cleanups run newest first, then the process exits (0 when stopped, 1 on failure).
 */
export function runBenchServer(main: (cleanups: Cleanups) => Promise<void>): void {
  const cleanups: Cleanups = [];
  const stop = async (code: number) => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop(0));
  main(cleanups).catch(async (error) => {
    console.error(error);
    await stop(1);
  });
}

/**
 * The service's app for a benchmark: no Temporal (the routes measured never reach it), access
 * log to /dev/null, rate limits in Postgres as production runs them, high enough never to
 * trigger (the benchmark measures their bookkeeping, not refusals).
 */
export async function benchService(config: Config, db: Knex, overrides: Partial<Config> = {}): Promise<Koa> {
  return buildApp({
    config: {
      ...config,
      RATE_LIMIT_CALLER_POINTS: 1e9,
      RATE_LIMIT_ORGANIZATION_POINTS: 1e9,
      RATE_LIMIT_MEMORY: false,
      ...overrides,
    },
    db,
    temporal: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
    providers: createProviders(config),
    logger: createLogger('info', pino.destination({ dest: '/dev/null', sync: false })),
    clock: systemClock,
    serviceKeys: await loadServiceKeys(JSON.stringify(await generateServiceSigningKey())),
  }).app;
}

/** Listens on an ephemeral port of 127.0.0.1; its origin. */
export async function listenLocal(app: Koa): Promise<string> {
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

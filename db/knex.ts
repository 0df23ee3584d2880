import path from 'node:path';
import knex, { type Knex } from 'knex';

export type { Knex };

export const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

/** Where knex reports pool and driver trouble; the process logger when given. */
export interface DbLogger {
  warn(message: string): void;
  error(message: string): void;
}

/** One knex instance per process; the same code runs against local, embedded or managed Postgres. */
export function createDb(connectionString: string, poolMax = 10, logger?: DbLogger): Knex {
  return knex({
    client: 'pg',
    ...(logger
      ? {
          log: {
            warn: (message: unknown) => logger.warn(`knex: ${String(message)}`),
            error: (message: unknown) => logger.error(`knex: ${String(message)}`),
            deprecate: (method: string, alternative: string) =>
              logger.warn(`knex: ${method} is deprecated, use ${alternative}`),
            debug: () => {},
          },
        }
      : {}),
    connection: { connectionString, application_name: 'lending-service' },
    pool: { min: 0, max: poolMax },
    migrations: { directory: MIGRATIONS_DIR, loadExtensions: ['.ts'], tableName: 'knex_migrations' },
  });
}

/** Brings the schema up to date; safe to call on every start. */
export async function migrate(db: Knex): Promise<void> {
  await db.migrate.latest();
}

/** Creates a database on the server of `adminUrl` unless it exists; returns its URL. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = createDb(adminUrl, 1);
  try {
    const found = await admin.raw('select 1 from pg_database where datname = ?', [name]);
    if (found.rows.length === 0) await admin.raw('create database ??', [name]);
  } finally {
    await admin.destroy();
  }
  return withDatabase(adminUrl, name);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = createDb(adminUrl, 1);
  try {
    await admin.raw('drop database if exists ?? with (force)', [name]);
  } finally {
    await admin.destroy();
  }
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** A Postgres unique violation (23505), of the named constraint when one is given. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pg = error as { code?: string; constraint?: string } | null;
  return pg?.code === '23505' && (constraint === undefined || pg.constraint === constraint);
}

/** Whether Postgres answers (the readiness probe). */
export async function ping(db: Knex): Promise<void> {
  await db.raw('select 1');
}

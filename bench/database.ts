import { chmod, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createDb, dropDatabase, ensureDatabase, migrate } from '../db/knex';
import { seedDemoData, type SeedOptions } from '../db/seeds/demo';
import { startEmbeddedPostgres } from '../dev/embedded-postgres';
import { freePort } from '../test/support/ports';

/**
 * A fresh database for one benchmark process, on DATABASE_URL's server or on an embedded one.
 * What to undo (the database, the embedded server) is pushed onto `cleanups`.
 */
export async function benchDatabase(
  adminUrl: string | undefined,
  cleanups: (() => Promise<unknown>)[],
): Promise<string> {
  if (!adminUrl) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'lending-bench-pg-'));
    await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user
    const embedded = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false });
    cleanups.push(() => embedded.stop());
    adminUrl = embedded.url;
  }
  const databaseName = `lending_bench_${process.pid}`;
  const databaseUrl = await ensureDatabase(adminUrl, databaseName);
  const admin = adminUrl;
  cleanups.push(() => dropDatabase(admin, databaseName));
  return databaseUrl;
}

/** The bench database migrated and seeded with the demo data, through a small pool closed by `cleanups`. */
export async function demoDatabase(
  databaseUrl: string,
  seedOptions: SeedOptions,
  cleanups: (() => Promise<unknown>)[],
): Promise<Knex> {
  const db = createDb(databaseUrl, 4);
  cleanups.push(() => db.destroy());
  await migrate(db);
  await seedDemoData(db, seedOptions);
  return db;
}

import { loadConfig } from '../config';
import { createDb, migrate } from './knex';

/** `npm run migrate`: applies migrations to DATABASE_URL (the service also does this on start). */
async function main() {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required for npm run migrate');
  const db = createDb(config.DATABASE_URL, 1);
  try {
    await migrate(db);
    console.log('migrations applied');
  } finally {
    await db.destroy();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

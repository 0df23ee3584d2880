import { strict as assert } from 'node:assert';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createDb, ensureDatabase, migrate } from '../../../db/knex';
import { startEmbeddedPostgres } from '../../../dev/embedded-postgres';
import { freePort, isListening } from '../../support/ports';

describe('embedded PostgreSQL (no DATABASE_URL)', () => {
  it('runs a real PostgreSQL 18 that answers through knex, takes the migrations, and stops', async function () {
    this.timeout(60_000);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'lending-embedded-pg-'));
    const port = await freePort();
    const pg = await startEmbeddedPostgres({ dataDir, port, persistent: false });
    try {
      const url = await ensureDatabase(pg.url, 'embedded_check');
      const db = createDb(url, 2);
      try {
        const { rows } = await db.raw("select current_setting('server_version_num')::int as version");
        assert.ok(rows[0].version >= 180000, `PostgreSQL 18, got ${rows[0].version}`);
        await migrate(db);
        await db('organizations').insert({ id: 'org-embedded', name: 'Embedded' });
        const [row] = await db('organizations').where({ id: 'org-embedded' });
        assert.equal(row.name, 'Embedded');
      } finally {
        await db.destroy();
      }
    } finally {
      await pg.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
    assert.equal(await isListening(port), false, 'the server is stopped');
  });
});

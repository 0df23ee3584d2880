import type { Knex } from 'knex';

/**
 * The SHA-256 of a financing document's kept copy (domain/financing/keys.ts), recorded the first
 * time the copy is kept and checked by every later read of it (each extraction's store step, and
 * the analysis step before the provider is given the copy): what was extracted and financed is
 * what the store holds. Null for documents not kept yet; recorded on first read for copies kept
 * before this migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('financing_documents', (t) => {
    t.text('sha256');
  });
  await knex.raw(
    `alter table financing_documents add constraint financing_documents_sha256 check (sha256 ~ '^[0-9a-f]{64}$')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('financing_documents', (t) => {
    t.dropColumn('sha256');
  });
}

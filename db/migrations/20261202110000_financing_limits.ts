import type { Knex } from 'knex';

/**
 * Invoice financing's limits. `extractions_begun_at`: when the invoice's recent extractions began
 * (its registration and each re-extraction, only those within EXTRACTION_LIMIT_WINDOW kept),
 * held on the invoice's own row so the statement that begins one counts them under the row's
 * lock. The documents index serves the presign quota's count of a merchant's pending uploads
 * (URL still valid); its bytes in the window are read through the (organization, merchant,
 * created_at) index already there.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table financing_invoices add column extractions_begun_at timestamptz[] not null default '{}'`);
  await knex.schema.alterTable('financing_documents', (t) => {
    t.index(['organization_id', 'merchant_id', 'upload_expires_at'], 'financing_documents_pending');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('financing_documents', (t) => {
    t.dropIndex(['organization_id', 'merchant_id', 'upload_expires_at'], 'financing_documents_pending');
  });
  await knex.raw('alter table financing_invoices drop column extractions_begun_at');
}

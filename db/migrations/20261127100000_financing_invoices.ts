import type { Knex } from 'knex';

/**
 * Invoice financing, part 2: the invoices registered on uploaded documents, and what their
 * extraction found. One invoice per document; it belongs to the document's merchant and
 * organization by a composite foreign key, so a row can never pair one merchant's invoice with
 * another's document. `extraction` counts the extractions asked for: the run records an outcome
 * only for the number it began with, so a late answer to an older extraction never overwrites a
 * newer one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'alter table financing_documents add constraint financing_documents_owner unique (id, organization_id, merchant_id)',
  );
  await knex.schema.createTable('financing_invoices', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable();
    t.text('merchant_id').notNullable();
    t.uuid('document_id').notNullable().unique();
    t.foreign(['document_id', 'organization_id', 'merchant_id'])
      .references(['id', 'organization_id', 'merchant_id'])
      .inTable('financing_documents');
    t.text('status').notNullable().checkIn(['PENDING', 'EXTRACTED', 'FAILED', 'NOT_UPLOADED']);
    t.integer('extraction').notNullable().defaultTo(1);
    t.bigint('amount_minor_units');
    t.text('currency');
    t.date('issued_date');
    t.date('due_date');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.text('failure_reason');
    /** Who registered it (the financing token's subject). */
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('extracted_at', { useTz: true });
    t.index(['organization_id', 'merchant_id', 'created_at']);
  });
  await knex.raw(`alter table financing_invoices
    add constraint financing_invoices_amount check (amount_minor_units > 0),
    add constraint financing_invoices_currency check (currency ~ '^[A-Z]{3}$'),
    add constraint financing_invoices_dates check (due_date >= issued_date),
    add constraint financing_invoices_extraction check (extraction > 0),
    add constraint financing_invoices_extracted check (
      status <> 'EXTRACTED' or (amount_minor_units is not null and currency is not null
        and issued_date is not null and due_date is not null and extracted_at is not null))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('financing_invoices');
  await knex.raw('alter table financing_documents drop constraint financing_documents_owner');
}

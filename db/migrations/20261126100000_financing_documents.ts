import type { Knex } from 'knex';

/**
 * Invoice financing, part 1: the documents merchants upload through presigned URLs. A row is
 * made when the URL is presigned (AWAITING_UPLOAD), owned by the merchant and its organization;
 * the object's key is derived from the row and never from anything the client sends.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('financing_documents', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('merchant_id').notNullable().references('merchants.id');
    t.text('document_type').notNullable().checkIn(['INVOICE']);
    t.text('content_type').notNullable().checkIn(['application/pdf', 'image/jpeg', 'image/png']);
    t.bigint('size_bytes').notNullable();
    t.text('object_key').notNullable().unique();
    t.text('status')
      .notNullable()
      .defaultTo('AWAITING_UPLOAD')
      .checkIn(['AWAITING_UPLOAD', 'UPLOADED', 'NEVER_UPLOADED']);
    /** Who presigned it (the financing token's subject). */
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('upload_expires_at', { useTz: true }).notNullable();
    t.timestamp('uploaded_at', { useTz: true });
    t.index(['organization_id', 'merchant_id', 'created_at']);
  });
  await knex.raw('alter table financing_documents add constraint financing_documents_size check (size_bytes > 0)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('financing_documents');
}

import type { Knex } from 'knex';

/**
 * A financing document's organization is its merchant's, by one composite foreign key instead of
 * two separate ones (organization, merchant): stronger (a row cannot pair a merchant with another
 * organization) and one key check per presigned upload instead of two.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table merchants add constraint merchants_id_organization unique (id, organization_id)');
  await knex.raw(`alter table financing_documents
    drop constraint financing_documents_organization_id_foreign,
    drop constraint financing_documents_merchant_id_foreign,
    add constraint financing_documents_merchant foreign key (merchant_id, organization_id)
      references merchants (id, organization_id)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter table financing_documents
    drop constraint financing_documents_merchant,
    add constraint financing_documents_organization_id_foreign foreign key (organization_id) references organizations (id),
    add constraint financing_documents_merchant_id_foreign foreign key (merchant_id) references merchants (id)`);
  await knex.raw('alter table merchants drop constraint merchants_id_organization');
}

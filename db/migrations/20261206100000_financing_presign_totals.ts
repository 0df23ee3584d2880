import type { Knex } from 'knex';

/**
 * The presign quota without reading the window (issue 34). Each document carries its merchant's
 * running totals, in `created_at` order: how many documents and how many bytes the merchant had
 * presigned up to and including this one. A BEFORE INSERT trigger sets them from the merchant's
 * latest row (and keeps `created_at` from going backwards, so totals and time agree); inserts of
 * one merchant are serialized by the presign writer's advisory lock. What was presigned between
 * two moments is then the difference of two totals, each one index step away:
 * `financing_documents_presigned` (organization, merchant, created_at, count). `registered` is
 * set by a trigger on the invoice that registers the document, so the documents registered while
 * their URLs were valid are a short range of a partial index (not an anti-join per document).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table financing_documents
    add column presigned_count bigint,
    add column presigned_bytes bigint,
    add column registered boolean not null default false`);
  await knex.raw(`update financing_documents d
       set presigned_count = w.n, presigned_bytes = w.b
      from (select id, count(*) over m as n, sum(size_bytes) over m as b
              from financing_documents
            window m as (partition by organization_id, merchant_id order by created_at, id)) w
     where w.id = d.id`);
  await knex.raw(`update financing_documents d set registered = true
     where exists (select 1 from financing_invoices i where i.document_id = d.id)`);
  await knex.raw(`alter table financing_documents
    alter column presigned_count set not null,
    alter column presigned_bytes set not null`);
  await knex.raw(`create function financing_documents_presign_totals() returns trigger
    language plpgsql as $$
    declare
      last record;
    begin
      select created_at, presigned_count, presigned_bytes into last
        from financing_documents
       where organization_id = new.organization_id and merchant_id = new.merchant_id
       order by created_at desc, presigned_count desc
       limit 1;
      if found then
        new.created_at := greatest(new.created_at, last.created_at);
        new.presigned_count := last.presigned_count + 1;
        new.presigned_bytes := last.presigned_bytes + new.size_bytes;
      else
        new.presigned_count := 1;
        new.presigned_bytes := new.size_bytes;
      end if;
      return new;
    end $$`);
  await knex.raw(`create trigger financing_documents_presign_totals before insert on financing_documents
    for each row execute function financing_documents_presign_totals()`);
  await knex.raw(`create function financing_documents_registered() returns trigger
    language plpgsql as $$
    begin
      update financing_documents set registered = true
       where id = new.document_id and organization_id = new.organization_id and not registered;
      return null;
    end $$`);
  await knex.raw(`create trigger financing_documents_registered after insert on financing_invoices
    for each row execute function financing_documents_registered()`);
  // One index leads with (organization, merchant): with stale statistics (a table that grew since
  // its last analyze) the planner, estimating one row either way, took the pending-uploads index
  // and sorted every document of the merchant for each insert. The pending count reads the
  // totals now; its refusal's wait reads this index too.
  await knex.raw('drop index financing_documents_pending');
  await knex.raw('drop index financing_documents_organization_id_merchant_id_created_at_index');
  await knex.raw(`create index financing_documents_presigned
    on financing_documents (organization_id, merchant_id, created_at, presigned_count)`);
  await knex.raw(`create index financing_documents_registered
    on financing_documents (organization_id, merchant_id, created_at) where registered`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index financing_documents_registered');
  await knex.raw('drop index financing_documents_presigned');
  await knex.raw(`create index financing_documents_organization_id_merchant_id_created_at_index
    on financing_documents (organization_id, merchant_id, created_at)`);
  await knex.raw(`create index financing_documents_pending
    on financing_documents (organization_id, merchant_id, upload_expires_at)`);
  await knex.raw('drop trigger financing_documents_registered on financing_invoices');
  await knex.raw('drop function financing_documents_registered()');
  await knex.raw('drop trigger financing_documents_presign_totals on financing_documents');
  await knex.raw('drop function financing_documents_presign_totals()');
  await knex.raw(`alter table financing_documents
    drop column registered,
    drop column presigned_bytes,
    drop column presigned_count`);
}

import type { Knex } from 'knex';

/**
 * A merchant's running totals as of a moment: those of its latest document presigned at or before
 * it (`infinity`: its latest of all), zeros before its first; `as_of` is the moment asked about.
 * The one lookup both the insert trigger and the presign count make: one step in
 * `financing_documents_presigned`.
 */
const TOTALS_FUNCTION = `create function financing_presign_totals(p_organization text, p_merchant text, p_as_of timestamptz,
    out as_of timestamptz, out created_at timestamptz, out presigned_count bigint, out presigned_bytes bigint)
  language plpgsql stable as $$
  #variable_conflict use_column
  begin
    select f.created_at, f.presigned_count, f.presigned_bytes
      into created_at, presigned_count, presigned_bytes
      from financing_documents f
     where f.organization_id = p_organization and f.merchant_id = p_merchant and f.created_at <= p_as_of
     order by f.created_at desc, f.presigned_count desc
     limit 1;
    as_of := p_as_of;
    presigned_count := coalesce(presigned_count, 0);
    presigned_bytes := coalesce(presigned_bytes, 0);
  end $$`;

/**
 * One batch of presigns, decided and recorded in one call (one round trip, its own transaction):
 * for each merchant in turn (in key order, so two batches never wait on each other in a cycle),
 * its advisory lock, then its usage read from the totals (each statement of the function reads
 * what was committed before it, the lock's previous holder included), then each of its presigns
 * in the batch's order, recorded when it fits. `p_rows`: the documents as JSON, `created_at`
 * the moment each was asked for (the merchant's first one is the moment its usage is read at).
 * Answers every document with what refused it (empty when recorded): PENDING, BYTES.
 */
const PRESIGN_FUNCTION = `create function financing_presign(
    p_rows jsonb, p_pending bigint, p_bytes bigint, p_window_ms bigint, p_valid_ms bigint)
  returns table (document_id uuid, refused_by text[])
  language plpgsql as $$
  #variable_conflict use_column
  declare
    m record;
    r record;
    v_now timestamptz;
    latest record;
    valid record;
    windowed record;
    v_pending bigint;
    v_bytes bigint;
  begin
    for m in
      select distinct x->>'organization_id' as org, x->>'merchant_id' as merchant
        from jsonb_array_elements(p_rows) x
       order by 1, 2
    loop
      perform pg_advisory_xact_lock(hashtextextended('financing-presign:' || m.org || ':' || m.merchant, 0));
      v_now := null;
      for r in
        select d.* from jsonb_array_elements(p_rows) with ordinality x(doc, n),
               jsonb_populate_record(null::financing_documents, x.doc) d
         where d.organization_id = m.org and d.merchant_id = m.merchant
         order by x.n
      loop
        if v_now is null then
          v_now := r.created_at;
          latest := financing_presign_totals(m.org, m.merchant, 'infinity');
          valid := financing_presign_totals(m.org, m.merchant, v_now - p_valid_ms * interval '1 millisecond');
          windowed := financing_presign_totals(m.org, m.merchant, v_now - p_window_ms * interval '1 millisecond');
          select latest.presigned_count - valid.presigned_count
                 - (select count(*) from financing_documents f
                     where f.organization_id = m.org and f.merchant_id = m.merchant and f.registered
                       and f.created_at > valid.as_of),
                 latest.presigned_bytes - windowed.presigned_bytes
            into v_pending, v_bytes;
        end if;
        document_id := r.id;
        refused_by := '{}';
        if v_pending >= p_pending then refused_by := refused_by || 'PENDING'::text; end if;
        if v_bytes + r.size_bytes > p_bytes then refused_by := refused_by || 'BYTES'::text; end if;
        if cardinality(refused_by) = 0 then
          insert into financing_documents (id, organization_id, merchant_id, document_type, content_type,
                                           size_bytes, object_key, created_by, created_at, upload_expires_at)
          values (r.id, r.organization_id, r.merchant_id, r.document_type, r.content_type,
                  r.size_bytes, r.object_key, r.created_by, r.created_at, r.upload_expires_at);
          v_pending := v_pending + 1;
          v_bytes := v_bytes + r.size_bytes;
        end if;
        return next;
      end loop;
    end loop;
  end $$`;

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
  await knex.raw(TOTALS_FUNCTION);
  await knex.raw(`create function financing_documents_presign_totals() returns trigger
    language plpgsql as $$
    declare
      last record := financing_presign_totals(new.organization_id, new.merchant_id, 'infinity');
    begin
      -- Never earlier than the merchant's last: totals and time agree.
      new.created_at := greatest(new.created_at, last.created_at);
      new.presigned_count := last.presigned_count + 1;
      new.presigned_bytes := last.presigned_bytes + new.size_bytes;
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
  await knex.raw(PRESIGN_FUNCTION);
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
  await knex.raw('drop function financing_presign(jsonb, bigint, bigint, bigint, bigint)');
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
  await knex.raw('drop function financing_presign_totals(text, text, timestamptz)');
  await knex.raw(`alter table financing_documents
    drop column registered,
    drop column presigned_bytes,
    drop column presigned_count`);
}

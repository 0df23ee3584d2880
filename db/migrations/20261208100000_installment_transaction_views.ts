import type { Knex } from 'knex';

/**
 * The installment transaction lists' read model (spec 4.3): each item as the API answers it,
 * written with its event (db/loans/servicing-records.ts, `record`), so a page is one index range
 * over the rows it shows: no lookups of the push and the allocations per row, no JSON built per
 * read. One row per event (the account list's item, `{transaction, installments}`) and one per
 * allocation record (one installment's list, `{transaction, allocation}`), keyed by the event's
 * seq like the records they render. Events and records are append-only, so their items never
 * change once written.
 *
 * Events recorded before this migration are rendered here, in SQL, the way domain/loans/views.ts
 * renders them for `record` (timestamps ISO 8601 in UTC with milliseconds, amounts as numbers,
 * a repayment's transaction its push, allocations in loan and position order).
 */

const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const TRANSACTION = `case when t.id is null then json_build_object(
    'id', e.id, 'resource_id', e.resource_id, 'status', 'POSTED', 'mobilemoney_transaction_id', null,
    'amount', json_build_object('value', e.amount, 'currency', e.currency),
    'fee_amount', json_build_object('value', 0, 'currency', e.currency),
    'failure_reason', null, 'transacted_at', ${iso('e.created_at')}, 'confirmed_at', ${iso('e.created_at')},
    'posted_at', ${iso('e.created_at')}, 'failed_at', null,
    'details', json_strip_nulls(json_build_object('type', e.kind, 'direction', 'ADJUSTMENT', 'account_id', e.account_id,
      'reverses_id', e.reverses_id, 'loan_id', case when e.kind = 'WAIVER' then e.loan_id end,
      'reason', nullif(e.reason, ''))))
  else json_build_object(
    'id', t.id, 'resource_id', t.resource_id, 'status', t.status, 'mobilemoney_transaction_id', t.mobilemoney_transaction_id,
    'amount', json_build_object('value', t.amount, 'currency', t.currency),
    'fee_amount', json_build_object('value', t.fee_amount, 'currency', t.currency),
    'failure_reason', t.failure_reason, 'transacted_at', ${iso('t.transacted_at')},
    'confirmed_at', ${iso('t.confirmed_at')}, 'posted_at', ${iso('t.posted_at')}, 'failed_at', ${iso('t.failed_at')},
    'details', t.details) end`;

const ALLOCATION = `json_build_object('id', a.id, 'balance_id', a.installment_id, 'cycle_id', a.loan_id,
    'position', a.position, 'allocated_amount', a.allocated_amount, 'principal_amount', a.principal_amount,
    'interest_amount', a.interest_amount, 'arrears_amount', a.arrears_amount, 'allocated_at', ${iso('a.allocated_at')},
    'effect', a.effect, 'source', a.source)`;

/**
 * Renders the items of every event (and allocation record) that has none yet, in sequence order:
 * a page's items then lie together on the heap, as live ones, written one event after another, do.
 */
export const BACKFILL = [
  `insert into loan_transaction_views (event_id, organization_id, account_id, seq, view)
   select e.id, e.organization_id, e.account_id, e.seq,
          json_build_object('transaction', ${TRANSACTION}, 'installments',
            coalesce((select json_agg(${ALLOCATION} order by a.loan_id, a.position)
                        from installment_allocations a where a.event_id = e.id), '[]'::json))
     from loan_transactions e
     left join transactions t on t.id = e.transaction_id
    where not exists (select 1 from loan_transaction_views v where v.event_id = e.id)
    order by e.seq`,
  `insert into installment_allocation_views (allocation_id, organization_id, installment_id, seq, view)
   select a.id, a.organization_id, a.installment_id, a.seq,
          json_build_object('transaction', v.view -> 'transaction', 'allocation', ${ALLOCATION})
     from installment_allocations a
     join loan_transaction_views v on v.event_id = a.event_id
    where not exists (select 1 from installment_allocation_views w where w.allocation_id = a.id)
    order by a.seq`,
];

/**
 * Every event and allocation record has its item by the time its transaction commits (deferred
 * constraint triggers): a worker still on the code before this migration (a rolling upgrade)
 * fails to record, and its activity is retried until a worker that writes items takes it,
 * rather than leaving events the lists would never show.
 */
const ITEM_CHECKS = `
  create function loan_transaction_has_item() returns trigger language plpgsql as $$
  begin
    if not exists (select 1 from loan_transaction_views where event_id = new.id) then
      raise exception 'loan transaction % has no list item', new.id using errcode = 'foreign_key_violation';
    end if;
    return null;
  end $$;
  create function installment_allocation_has_item() returns trigger language plpgsql as $$
  begin
    if not exists (select 1 from installment_allocation_views where allocation_id = new.id) then
      raise exception 'installment allocation % has no list item', new.id using errcode = 'foreign_key_violation';
    end if;
    return null;
  end $$;
  create constraint trigger loan_transactions_have_items after insert on loan_transactions
    deferrable initially deferred for each row execute function loan_transaction_has_item();
  create constraint trigger installment_allocations_have_items after insert on installment_allocations
    deferrable initially deferred for each row execute function installment_allocation_has_item();`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('loan_transaction_views', (t) => {
    t.uuid('event_id').primary().references('loan_transactions.id');
    t.text('organization_id').notNullable();
    t.uuid('account_id').notNullable();
    t.bigint('seq').notNullable();
    /** The account list's item: `{transaction, installments}`. */
    t.json('view').notNullable();
    t.index(['account_id', 'seq']);
  });
  await knex.schema.createTable('installment_allocation_views', (t) => {
    t.uuid('allocation_id').primary().references('installment_allocations.id');
    t.text('organization_id').notNullable();
    t.uuid('installment_id').notNullable();
    t.bigint('seq').notNullable();
    /** One installment's list item: `{transaction, allocation}`. */
    t.json('view').notNullable();
    t.index(['installment_id', 'seq']);
  });
  // The triggers first: creating them waits for transactions writing events to finish and holds
  // new ones back until this migration commits, so the backfill below sees every event.
  await knex.raw(ITEM_CHECKS);
  for (const statement of BACKFILL) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop trigger installment_allocations_have_items on installment_allocations;
    drop trigger loan_transactions_have_items on loan_transactions;
    drop function installment_allocation_has_item(); drop function loan_transaction_has_item();`);
  await knex.schema.dropTable('installment_allocation_views');
  await knex.schema.dropTable('loan_transaction_views');
}

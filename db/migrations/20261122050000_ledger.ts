import type { Knex } from 'knex';

/**
 * The double-entry ledger for mobile money. A journal entry is one posting for one transaction
 * (COLLECTION, HOLD, PAYOUT, RELEASE, FEE, ...); its legs carry signed amounts in minor units
 * (debit positive, credit negative) against text-named ledger accounts (db/ledger/ledger.ts names them).
 *
 * - unique(transaction_id, kind) makes posting idempotent: a retried post finds the entry there.
 * - Deferred constraint triggers check, at commit, that every entry touched by the transaction
 *   has at least two legs summing to zero, so an unbalanced entry can never commit, whoever writes.
 * - Both tables are append-only (UPDATE, DELETE and TRUNCATE are refused): corrections are new
 *   entries. transaction_id has no foreign key: the transactions table comes in a later migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('journal_entries', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('transaction_id').notNullable();
    t.text('kind').notNullable();
    t.text('currency').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['transaction_id', 'kind']);
  });

  await knex.schema.createTable('ledger_legs', (t) => {
    t.uuid('journal_entry_id').notNullable().references('journal_entries.id');
    t.smallint('leg').notNullable();
    t.text('ledger_account').notNullable();
    t.bigint('amount').notNullable();
    t.primary(['journal_entry_id', 'leg']);
    t.index(['ledger_account']);
  });
  await knex.raw('alter table ledger_legs add constraint ledger_legs_amount_nonzero check (amount <> 0)');
  await knex.raw('alter table ledger_legs add constraint ledger_legs_leg_positive check (leg > 0)');
  await knex.raw("alter table ledger_legs add constraint ledger_legs_account_named check (ledger_account <> '')");

  // One check for one entry: at least two legs, summing to zero.
  await knex.raw(`
    create function ledger_check_entry_balanced(entry_id uuid) returns void
    language plpgsql as $$
    declare
      leg_count bigint;
      leg_sum numeric;
    begin
      select count(*), coalesce(sum(amount), 0) into leg_count, leg_sum
        from ledger_legs where journal_entry_id = entry_id;
      if leg_count < 2 then
        raise exception 'journal entry % has % leg(s); a balanced entry needs at least two', entry_id, leg_count
          using errcode = 'check_violation';
      end if;
      if leg_sum <> 0 then
        raise exception 'journal entry % is unbalanced: its legs sum to % (must be 0)', entry_id, leg_sum
          using errcode = 'check_violation';
      end if;
    end;
    $$
  `);

  await knex.raw(`
    create function ledger_legs_balanced() returns trigger
    language plpgsql as $$
    begin
      if tg_op in ('INSERT', 'UPDATE') then
        perform ledger_check_entry_balanced(new.journal_entry_id);
      end if;
      if tg_op = 'DELETE' or (tg_op = 'UPDATE' and old.journal_entry_id is distinct from new.journal_entry_id) then
        perform ledger_check_entry_balanced(old.journal_entry_id);
      end if;
      return null;
    end;
    $$
  `);
  await knex.raw(`
    create constraint trigger ledger_legs_balanced
      after insert or update or delete on ledger_legs
      deferrable initially deferred
      for each row execute function ledger_legs_balanced()
  `);

  // An entry inserted with no legs at all fires nothing on ledger_legs: check it from its own row.
  await knex.raw(`
    create function journal_entries_balanced() returns trigger
    language plpgsql as $$
    begin
      perform ledger_check_entry_balanced(new.id);
      return null;
    end;
    $$
  `);
  await knex.raw(`
    create constraint trigger journal_entries_balanced
      after insert on journal_entries
      deferrable initially deferred
      for each row execute function journal_entries_balanced()
  `);

  await knex.raw(`
    create function ledger_append_only() returns trigger
    language plpgsql as $$
    begin
      raise exception '% is append-only: % is not allowed (post a correcting entry instead)', tg_table_name, tg_op
        using errcode = 'restrict_violation';
    end;
    $$
  `);
  for (const table of ['journal_entries', 'ledger_legs']) {
    await knex.raw(
      `create trigger ${table}_append_only before update or delete on ${table} for each row execute function ledger_append_only()`,
    );
    await knex.raw(
      `create trigger ${table}_no_truncate before truncate on ${table} for each statement execute function ledger_append_only()`,
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  // Dropping a table drops its triggers; the functions go after.
  await knex.schema.dropTable('ledger_legs');
  await knex.schema.dropTable('journal_entries');
  await knex.raw('drop function ledger_append_only()');
  await knex.raw('drop function journal_entries_balanced()');
  await knex.raw('drop function ledger_legs_balanced()');
  await knex.raw('drop function ledger_check_entry_balanced(uuid)');
}

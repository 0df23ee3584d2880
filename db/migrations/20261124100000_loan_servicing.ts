import type { Knex } from 'knex';

/**
 * Loans, part 2 (servicing). Money is integer minor units throughout.
 *
 * - credit_lines: a borrower's revolving credit on a REVOLVING_CREDIT product (one per borrower
 *   and product), with its limit; each draw is a loan row (a cycle) pointing at it. Term loans
 *   stay one at a time (the partial unique index now leaves cycles out).
 * - loan_transactions: the lending account's transaction events, in `seq` order (the keyset the
 *   installment transaction lists page on): REPAYMENT (its id is the push's transaction id, one
 *   event per push), REVERSAL (of one repayment, at most once) and WAIVER.
 * - installment_allocations: what each event did to each installment, one record per (event,
 *   installment), append-only like the ledger: a reversal adds offsetting records.
 * - loan_penalty_charges: one charge per (loan, period), whatever reruns.
 * - installments.schedule_status: what time alone says (UPCOMING, DUE, OVERDUE), so a reversed
 *   payment puts an installment back where its dates put it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('loan_products', (t) => {
    t.bigint('credit_limit');
  });
  await knex.raw(`alter table loan_products add constraint loan_products_credit_limit check (
    (product_type = 'REVOLVING_CREDIT') = (credit_limit is not null) and (credit_limit is null or credit_limit > 0))`);

  await knex.schema.createTable('credit_lines', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('product_id').notNullable().references('loan_products.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.bigint('credit_limit').notNullable();
    t.text('currency').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['organization_id', 'user_id', 'product_id']);
  });
  await knex.raw('alter table credit_lines add constraint credit_lines_limit check (credit_limit > 0)');

  await knex.schema.alterTable('loans', (t) => {
    t.uuid('credit_line_id').references('credit_lines.id');
    t.index(['credit_line_id']);
  });
  await knex.raw('drop index loans_one_running_per_borrower');
  await knex.raw(
    `create unique index loans_one_running_per_borrower on loans (organization_id, user_id)
      where status in ('PENDING_DISBURSEMENT', 'ACTIVE') and credit_line_id is null`,
  );

  await knex.schema.alterTable('installments', (t) => {
    t.text('schedule_status').notNullable().defaultTo('UPCOMING').checkIn(['UPCOMING', 'DUE', 'OVERDUE']);
  });
  await knex.raw(`update installments set schedule_status = case
      when status <> 'PAID' then status
      when due_date > current_date then 'UPCOMING' when due_date = current_date then 'DUE' else 'OVERDUE' end`);

  await knex.schema.createTable('loan_transactions', (t) => {
    t.uuid('id').primary();
    t.specificType('seq', 'bigint generated always as identity').notNullable().unique();
    t.text('resource_id').notNullable().unique();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.text('kind').notNullable().checkIn(['REPAYMENT', 'REVERSAL', 'WAIVER']);
    /** A repayment's push (the same id); null for reversals and waivers. */
    t.uuid('transaction_id').unique().references('transactions.id');
    /** A reversal's repayment: reversed at most once. */
    t.uuid('reverses_id').unique().references('loan_transactions.id');
    /** The loan whose workflow applied the event. */
    t.uuid('loan_id').references('loans.id');
    t.bigint('amount').notNullable();
    t.bigint('allocated_amount').notNullable();
    /** A repayment beyond everything owed (pushes racing each other): stays on the credit account, the payer's to refund. */
    t.bigint('overpaid_amount').notNullable().defaultTo(0);
    t.text('currency').notNullable();
    t.text('reason');
    t.text('created_by');
    /** When the money counts from (a repayment: when its push was posted): penalties are computed as of it. */
    t.timestamp('effective_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['account_id', 'seq']);
  });
  await knex.raw(`alter table loan_transactions add constraint loan_transactions_shape check (
    amount > 0 and allocated_amount >= 0 and overpaid_amount >= 0 and allocated_amount + overpaid_amount = amount
    and (kind = 'REPAYMENT') = (transaction_id is not null) and (kind = 'REVERSAL') = (reverses_id is not null))`);

  await knex.schema.createTable('installment_allocations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('event_id').notNullable().references('loan_transactions.id');
    /** The event's seq, copied: the per-installment list pages on (installment_id, seq). */
    t.bigint('seq').notNullable();
    t.uuid('installment_id').notNullable().references('installments.id');
    t.uuid('loan_id').notNullable().references('loans.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.integer('position').notNullable();
    t.bigint('allocated_amount').notNullable();
    t.bigint('principal_amount').notNullable();
    t.bigint('interest_amount').notNullable();
    t.bigint('arrears_amount').notNullable();
    t.text('effect').notNullable().checkIn(['OBLIGATION_SETTLED', 'PARTIALLY_SETTLED', 'REVERSED', 'WAIVED']);
    t.text('source').notNullable().checkIn(['LIVE', 'REVERSAL', 'WAIVER']);
    t.timestamp('effective_at', { useTz: true }).notNullable();
    t.timestamp('allocated_at', { useTz: true }).notNullable();
    t.unique(['event_id', 'installment_id']);
    t.index(['installment_id', 'seq']);
    t.index(['loan_id']);
  });
  await knex.raw(`alter table installment_allocations add constraint installment_allocations_sum check (
    allocated_amount = principal_amount + interest_amount + arrears_amount and allocated_amount <> 0
    and ((source = 'REVERSAL') = (allocated_amount < 0))
    and sign(principal_amount) * sign(allocated_amount) >= 0 and sign(interest_amount) * sign(allocated_amount) >= 0
    and sign(arrears_amount) * sign(allocated_amount) >= 0)`);
  // Allocations are a record: corrections are new events (ledger_append_only is the ledger's).
  await knex.raw(
    `create trigger installment_allocations_append_only before update or delete on installment_allocations
       for each row execute function ledger_append_only()`,
  );
  await knex.raw(
    `create trigger installment_allocations_no_truncate before truncate on installment_allocations
       for each statement execute function ledger_append_only()`,
  );

  await knex.schema.createTable('loan_penalty_charges', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('loan_id').notNullable().references('loans.id');
    t.uuid('installment_id').notNullable().references('installments.id');
    /** 0 for the first charge (loan end + grace), then one per period. */
    t.integer('period').notNullable();
    /** The instant the charge was for: its basis is what was outstanding then. */
    t.timestamp('due_at', { useTz: true }).notNullable();
    t.bigint('basis').notNullable();
    t.integer('rate_basis_points').notNullable();
    t.bigint('amount').notNullable();
    t.timestamp('charged_at', { useTz: true }).notNullable();
    t.unique(['loan_id', 'period']);
  });
  await knex.raw(
    'alter table loan_penalty_charges add constraint loan_penalty_charges_amounts check (period >= 0 and basis >= 0 and amount >= 0)',
  );

  // The repayment reconciliation looks for posted pushes by their posting time.
  await knex.raw(
    `create index transactions_posted_pushes on transactions (posted_at) where type = 'STK_PUSH' and status = 'POSTED'`,
  );

  // Flat interest is owed from the disbursement: loans disbursed before it was recognised get it now.
  await knex.raw(`
    with owed as (
      select l.id, l.currency, l.interest from loans l
       where l.disbursed_at is not null and l.interest > 0
         and not exists (select 1 from journal_entries e where e.transaction_id = l.id and e.kind = 'INTEREST')
    ), entry as (
      insert into journal_entries (transaction_id, kind, currency)
      select id, 'INTEREST', currency from owed returning id, transaction_id
    )
    insert into ledger_legs (journal_entry_id, leg, ledger_account, amount)
    select entry.id, 1, 'loan-interest:' || owed.id, owed.interest from entry join owed on owed.id = entry.transaction_id
    union all
    select entry.id, 2, 'income:loan-interest', -owed.interest from entry join owed on owed.id = entry.transaction_id`);

  // For every disbursed loan: what the ledger says is owed against what its schedule says.
  await knex.raw(`
    create view loan_ledger_consistency as
    select l.id as loan_id, l.organization_id, l.status,
           coalesce((select sum(g.amount) from ledger_legs g
                      where g.ledger_account in ('loan:' || l.id, 'loan-interest:' || l.id, 'loan-penalty:' || l.id)), 0)
             as ledger_outstanding,
           coalesce((select sum(i.principal + i.interest + i.penalties - i.principal_paid - i.interest_paid - i.penalties_paid)
                       from installments i where i.loan_id = l.id), 0) as schedule_outstanding
      from loans l
     where l.disbursed_at is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop view loan_ledger_consistency');
  await knex.raw('drop index transactions_posted_pushes');
  await knex.schema.dropTable('loan_penalty_charges');
  await knex.schema.dropTable('installment_allocations');
  await knex.schema.dropTable('loan_transactions');
  await knex.schema.alterTable('installments', (t) => {
    t.dropColumn('schedule_status');
  });
  await knex.raw('drop index loans_one_running_per_borrower');
  await knex.raw(
    `create unique index loans_one_running_per_borrower on loans (organization_id, user_id)
      where status in ('PENDING_DISBURSEMENT', 'ACTIVE')`,
  );
  await knex.schema.alterTable('loans', (t) => {
    t.dropColumn('credit_line_id');
  });
  await knex.schema.dropTable('credit_lines');
  await knex.raw('alter table loan_products drop constraint loan_products_credit_limit');
  await knex.schema.alterTable('loan_products', (t) => {
    t.dropColumn('credit_limit');
  });
}

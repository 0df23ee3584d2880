import type { Knex } from 'knex';

/**
 * Loans, part 1 (origination). Money is integer minor units throughout.
 *
 * - loan_products: an organization's lending products (its own, `standard`, and the partner-a
 *   and partner-b ones), terms fixed in columns; REVOLVING_CREDIT is carried for part 2.
 * - loan_applications: an offer (APPROVED, with the terms it was made on copied in, so a later
 *   product change never alters an offer) and what became of it. One live offer per borrower
 *   and product.
 * - loans and installments: the loan made when an offer is taken, and its schedule; one loan
 *   per application, one installment per (loan, position).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('loan_products', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('code').notNullable();
    t.text('name').notNullable();
    t.text('product_type').notNullable().checkIn(['FLAT_RATE', 'REVOLVING_CREDIT']);
    t.text('currency').notNullable().defaultTo('KES');
    t.integer('interest_bps').notNullable();
    t.integer('interest_period_value').notNullable();
    t.text('interest_period_unit').notNullable().checkIn(['DAYS', 'WEEKS']);
    t.integer('standard_interest_bps').notNullable();
    t.integer('standard_interest_period_value').notNullable();
    t.text('standard_interest_period_unit').notNullable().checkIn(['DAYS', 'WEEKS']);
    t.bigint('min_amount').notNullable();
    t.bigint('max_amount').notNullable();
    /** A first loan may be at most this; every loan repaid without arrears raises it by limit_step. */
    t.bigint('first_loan_limit').notNullable();
    t.bigint('limit_step').notNullable();
    t.text('tenure_unit').notNullable().checkIn(['DAYS', 'WEEKS']);
    t.specificType('tenures', 'integer[]').notNullable();
    t.integer('default_tenure').notNullable();
    t.integer('collateral_bps').notNullable();
    t.integer('penalty_rate_bps').notNullable();
    t.text('penalty_calculation_basis').notNullable();
    t.text('penalty_type').notNullable();
    t.integer('penalty_period_days').notNullable();
    t.text('penalty_trigger').notNullable();
    t.integer('penalty_grace_period_days').notNullable();
    t.integer('penalty_max_charge_days').notNullable();
    t.bigint('offer_ttl_ms').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['organization_id', 'code']);
  });
  await knex.raw(`alter table loan_products add constraint loan_products_terms check (
    interest_bps >= 0 and standard_interest_bps >= 0 and interest_period_value > 0 and standard_interest_period_value > 0
    and min_amount > 0 and max_amount >= min_amount and first_loan_limit > 0 and limit_step >= 0
    and cardinality(tenures) > 0 and default_tenure = any(tenures) and collateral_bps between 0 and 10000
    and offer_ttl_ms > 0)`);

  await knex.schema.createTable('loan_applications', (t) => {
    t.uuid('id').primary();
    t.text('resource_id').notNullable().unique();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('product_id').notNullable().references('loan_products.id');
    t.text('product_code').notNullable();
    t.uuid('account_id').notNullable().references('accounts.id');
    t.uuid('current_account_id').notNullable().references('accounts.id');
    t.text('status').notNullable().checkIn(['APPROVED', 'ACCEPTED', 'DISBURSED', 'EXPIRED', 'CANCELLED']);
    /** The offer: the most the borrower may take, and the terms (a copy of the product's at offer time). */
    t.bigint('loan_amount').notNullable();
    t.integer('tenure_duration').notNullable();
    t.text('tenure_unit').notNullable();
    t.jsonb('terms').notNullable();
    t.text('currency').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    /** What the borrower took (set by the acceptance). */
    t.bigint('collateral_amount');
    t.uuid('collateral_hold_id');
    t.bigint('total_repayment_amount');
    t.uuid('loan_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('accepted_at', { useTz: true });
    t.timestamp('disbursed_at', { useTz: true });
    t.timestamp('expired_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id', 'user_id']);
  });
  await knex.raw(
    `create unique index loan_applications_one_live_offer on loan_applications (user_id, product_id) where status = 'APPROVED'`,
  );

  await knex.schema.createTable('loans', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('application_id').notNullable().unique().references('loan_applications.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.uuid('current_account_id').notNullable().references('accounts.id');
    t.text('status').notNullable().checkIn(['PENDING_DISBURSEMENT', 'ACTIVE', 'REPAID', 'WRITTEN_OFF']);
    t.bigint('principal').notNullable();
    t.bigint('interest').notNullable();
    t.bigint('collateral_amount').notNullable();
    t.uuid('collateral_hold_id');
    t.text('currency').notNullable();
    t.integer('tenure_duration').notNullable();
    t.text('tenure_unit').notNullable();
    t.date('start_date').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('disbursed_at', { useTz: true });
    /** When an installment first went overdue: a loan repaid without it raises the borrower's limit. */
    t.timestamp('arrears_at', { useTz: true });
    t.timestamp('closed_at', { useTz: true });
    t.index(['organization_id', 'user_id']);
    t.index(['account_id']);
  });
  await knex.raw(
    'alter table loans add constraint loans_amounts check (principal > 0 and interest >= 0 and collateral_amount >= 0)',
  );

  await knex.schema.createTable('installments', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('loan_id').notNullable().references('loans.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.integer('position').notNullable();
    t.date('due_date').notNullable();
    t.bigint('principal').notNullable();
    t.bigint('interest').notNullable();
    t.bigint('penalties').notNullable().defaultTo(0);
    t.bigint('principal_paid').notNullable().defaultTo(0);
    t.bigint('interest_paid').notNullable().defaultTo(0);
    t.bigint('penalties_paid').notNullable().defaultTo(0);
    t.text('status').notNullable().defaultTo('UPCOMING').checkIn(['UPCOMING', 'DUE', 'OVERDUE', 'PAID']);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['loan_id', 'position']);
    t.index(['organization_id', 'account_id']);
  });
  await knex.raw(`alter table installments add constraint installments_amounts check (
    position > 0 and principal >= 0 and interest >= 0 and penalties >= 0
    and principal_paid between 0 and principal and interest_paid between 0 and interest
    and penalties_paid between 0 and penalties)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('installments');
  await knex.schema.dropTable('loans');
  await knex.schema.dropTable('loan_applications');
  await knex.schema.dropTable('loan_products');
}

import type { Knex } from 'knex';

/**
 * An offer keeps the length of a schedule day its run was started with (`day_ms`, from
 * LOAN_DAY_LENGTH when it was made), so the loan's clock can be told from Postgres: its anchor is
 * the disbursement instant rounded down to a whole day, and its steps fall due on whole days from
 * there (domain/loans/steps.ts). A repayment is then allocated at once when the loan's run has
 * taken every step due by the push's posting, instead of waiting for the run. Offers made before
 * keep NULL: their loans' repayments are always handed to the run, as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('loan_applications', (t) => {
    t.bigInteger('day_ms').checkPositive();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('loan_applications', (t) => {
    t.dropColumn('day_ms');
  });
}

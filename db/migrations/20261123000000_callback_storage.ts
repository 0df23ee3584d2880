import type { Knex } from 'knex';

/**
 * Bounded callback handling. Per transaction and per KYC application, counters that a
 * conditional update claims atomically: raw callbacks stored (`callbacks_stored`) and, for
 * transactions, callbacks handed to the run (`callback_signals`), so concurrent floods cannot
 * pass either cap. `queue_timeout_at`: a B2C queue timeout noted (once; never a signal). What was
 * found wrong with a mobile-money callback (`note`); indexes for the retention purge (oldest
 * first) and for the job id a KYC callback names its application by.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (t) => {
    t.integer('callbacks_stored').notNullable().defaultTo(0);
    t.integer('callback_signals').notNullable().defaultTo(0);
    t.timestamp('queue_timeout_at', { useTz: true });
  });
  await knex.schema.alterTable('mobile_money_callbacks', (t) => {
    t.text('note');
    t.index(['received_at']);
  });
  await knex.schema.alterTable('kyc_applications', (t) => {
    t.integer('callbacks_stored').notNullable().defaultTo(0);
    t.unique(['job_id']);
  });
  await knex.schema.alterTable('kyc_callback_events', (t) => {
    t.index(['application_id']);
    t.index(['received_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kyc_callback_events', (t) => {
    t.dropIndex(['received_at']);
    t.dropIndex(['application_id']);
  });
  await knex.schema.alterTable('kyc_applications', (t) => {
    t.dropUnique(['job_id']);
    t.dropColumn('callbacks_stored');
  });
  await knex.schema.alterTable('mobile_money_callbacks', (t) => {
    t.dropIndex(['received_at']);
    t.dropColumn('note');
  });
  await knex.schema.alterTable('transactions', (t) => {
    t.dropColumn('queue_timeout_at');
    t.dropColumn('callback_signals');
    t.dropColumn('callbacks_stored');
  });
}

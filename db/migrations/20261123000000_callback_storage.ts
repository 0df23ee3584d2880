import type { Knex } from 'knex';

/**
 * Bounded callback storage: what was found wrong with a mobile-money callback (its note), and
 * indexes for the per-resource cap and the retention purge (oldest first), and the job id
 * a KYC callback names its application by.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mobile_money_callbacks', (t) => {
    t.text('note');
    t.index(['received_at']);
  });
  await knex.schema.alterTable('kyc_callback_events', (t) => {
    t.index(['application_id']);
    t.index(['received_at']);
  });
  // Callbacks name an application by our job id alone: one indexed, unique lookup.
  await knex.schema.alterTable('kyc_applications', (t) => {
    t.unique(['job_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kyc_applications', (t) => {
    t.dropUnique(['job_id']);
  });
  await knex.schema.alterTable('kyc_callback_events', (t) => {
    t.dropIndex(['received_at']);
    t.dropIndex(['application_id']);
  });
  await knex.schema.alterTable('mobile_money_callbacks', (t) => {
    t.dropIndex(['received_at']);
    t.dropColumn('note');
  });
}

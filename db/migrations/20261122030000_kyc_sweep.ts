import type { Knex } from 'knex';

/**
 * Each organization's expiry-sweep lease and due-window: a sweep runs for an organization only
 * when its window is due (scheduled or manual alike, no force), and one at a time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('kyc_sweep_leases', (t) => {
    t.text('organization_id').primary().references('organizations.id');
    t.timestamp('leased_until', { useTz: true });
    t.timestamp('next_due_at', { useTz: true });
    t.timestamp('last_started_at', { useTz: true });
    t.timestamp('last_finished_at', { useTz: true });
    t.jsonb('last_result');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('kyc_sweep_leases');
}

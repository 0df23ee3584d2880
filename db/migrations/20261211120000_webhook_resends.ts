import type { Knex } from 'knex';

/**
 * Resends, bounded and coalesced (issue 54):
 * - `webhook_deliveries.tried_at`: when the delivery's current generation last finished an
 *   attempt; null while it is queued (never tried since it was made or last resent). A resend
 *   of a queued delivery is the same delivery: it is answered as it is, not started again.
 * - `webhook_resends`: how many deliveries each resend started again, per endpoint, so a resend
 *   that would start more than WEBHOOK_RESENDS_PER_ENDPOINT of one endpoint's, or
 *   WEBHOOK_RESENDS_PER_ORGANIZATION of its organization's, within WEBHOOK_RESEND_WINDOW is 429.
 *   Rows older than the window are deleted by the next resend of their organization.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.timestamp('tried_at', { useTz: true });
  });
  await knex.raw('update webhook_deliveries set tried_at = updated_at where attempts > 0');
  await knex.schema.createTable('webhook_resends', (t) => {
    t.bigIncrements('id');
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('endpoint_id').notNullable();
    t.timestamp('resent_at', { useTz: true }).notNullable();
    t.integer('deliveries').notNullable();
    t.index(['organization_id', 'resent_at']);
    t.index(['endpoint_id', 'resent_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_resends');
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('tried_at');
  });
}

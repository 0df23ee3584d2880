import type { Knex } from 'knex';

/**
 * The webhook lists' filters as index ranges (`npm run bench:explain`): events of one type read
 * every event of that type in every organization, then sorted them (the only index leading with
 * the type is the outbox's unique key); an endpoint's deliveries of one status read all of its
 * deliveries. Each page is now one range over what it shows. Built concurrently: the outbox's
 * writers are every state change's trigger, and deliveries are written by the dispatcher.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'create index concurrently if not exists webhook_events_type_list on webhook_events (organization_id, type, occurred_at, id)',
  );
  await knex.raw(
    'create index concurrently if not exists webhook_deliveries_status_list on webhook_deliveries (endpoint_id, status, created_at, id)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index concurrently if exists webhook_deliveries_status_list');
  await knex.raw('drop index concurrently if exists webhook_events_type_list');
}

/** Built without blocking writers: outside a transaction. */
export const config = { transaction: false };

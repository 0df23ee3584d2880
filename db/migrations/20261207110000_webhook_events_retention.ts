import type { Knex } from 'knex';

/**
 * The webhook-event-retention schedule walks events from the oldest, across organizations: an
 * index on when they occurred (the list's index leads with the organization), built concurrently.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index concurrently if not exists webhook_events_occurred_at on webhook_events (occurred_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index concurrently if exists webhook_events_occurred_at');
}

/** Built without blocking the outbox's writers (every state change's trigger): outside a transaction. */
export const config = { transaction: false };

import type { Knex } from 'knex';

/**
 * Idempotency-Key records of the money-moving POSTs (api/middleware/idempotency.ts). One row per
 * (scope, key): the scope is the caller, method and route template, so two callers or two routes
 * never share a key. The primary key is the only lock: the first request inserts the row
 * RUNNING, every concurrent duplicate conflicts on it. A finished request stores the exact bytes
 * it sent, which identical retries replay until `expires_at`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('scope').notNullable();
    t.text('key').notNullable();
    /** SHA-256 of the canonical JSON of the validated path parameters and body. */
    t.text('fingerprint').notNullable();
    t.text('state').notNullable().checkIn(['RUNNING', 'DONE']);
    /** Which execution holds a RUNNING row: a taken-over executor can no longer write it. */
    t.uuid('lock_token').notNullable();
    t.integer('response_status');
    /** The response body exactly as sent (JSON text); null for a bodiless answer. */
    t.text('response_body');
    /** The answer's headers that are part of it (Location), replayed with it. */
    t.jsonb('response_headers');
    /** A RUNNING row whose lock has passed belongs to an executor that died: it may be taken over. */
    t.timestamp('locked_until', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    /** After this the row counts as absent and is purged. */
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['scope', 'key']);
    t.index(['expires_at']);
  });
  await knex.raw(
    "alter table idempotency_keys add constraint idempotency_keys_done_has_status check (state <> 'DONE' or response_status is not null)",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}

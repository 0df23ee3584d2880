import type { Knex } from 'knex';

/**
 * An endpoint that keeps failing backs off (issue 54): after WEBHOOK_BACKOFF_AFTER_FAILURES
 * failed attempts in a row (timeouts, connection failures, 5xx, 429), its deliveries make no
 * connection until `backing_off_until`, which doubles from WEBHOOK_RETRY_INITIAL up to
 * WEBHOOK_RETRY_MAX_INTERVAL with each further failure; one attempt at a time probes it when the
 * time comes, and a success ends it; the dispatcher starts no more runs for an endpoint holding
 * WEBHOOK_RUNS_PER_ENDPOINT not ended (an index of just those counts them). An endpoint disabled (by its organization, or after failing
 * for WEBHOOK_DISABLE_AFTER) emits `webhook_endpoint.disabled`, its view without any secret.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.timestamp('backing_off_until', { useTz: true });
  });
  await knex.raw(`
    create function webhook_endpoint_events() returns trigger language plpgsql as $$
    begin
      if old.enabled and not new.enabled then
        perform webhook_emit(new.organization_id, 'webhook_endpoint.disabled', new.id::text,
          jsonb_build_object('id', new.id, 'url', new.url, 'description', new.description,
            'event_types', to_jsonb(new.event_types), 'enabled', new.enabled, 'disabled_reason', new.disabled_reason,
            'failing_since', new.failing_since, 'backing_off_until', new.backing_off_until,
            'previous_secret_expires_at', new.previous_secret_expires_at,
            'created_at', new.created_at, 'updated_at', new.updated_at));
      end if;
      return null;
    end $$`);
  await knex.raw(`create trigger webhook_endpoints_webhook_events after update of enabled on webhook_endpoints
    for each row execute function webhook_endpoint_events()`);
  // The dispatcher's count of each endpoint's runs not ended (WEBHOOK_RUNS_PER_ENDPOINT).
  await knex.raw(
    `create index webhook_deliveries_live on webhook_deliveries (endpoint_id)
      where status = 'PENDING' and workflow_started_at is not null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists webhook_deliveries_live');
  await knex.raw('drop trigger if exists webhook_endpoints_webhook_events on webhook_endpoints');
  await knex.raw('drop function if exists webhook_endpoint_events()');
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.dropColumn('backing_off_until');
    t.dropColumn('consecutive_failures');
  });
}

import type { Knex } from 'knex';

/**
 * Outbound webhooks: the endpoints an organization registers, the events (an outbox written by
 * triggers in the transaction that commits the state change, so an event exists exactly when its
 * state committed, once per change), one delivery per event and endpoint, and each attempt.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('url').notNullable();
    t.text('description');
    t.specificType('event_types', 'text[]').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('disabled_reason');
    /** Standard Webhooks secrets (`whsec_` + base64): signing needs them in the clear. */
    t.text('secret').notNullable();
    /** The secret before the last rotation, still signed with until previous_secret_expires_at. */
    t.text('previous_secret');
    t.timestamp('previous_secret_expires_at', { useTz: true });
    /** The first failed attempt of the current run of failures; cleared by a success. */
    t.timestamp('failing_since', { useTz: true });
    t.timestamp('last_failed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id', 'created_at', 'id']);
  });

  await knex.schema.createTable('webhook_events', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('type').notNullable();
    t.text('resource_id').notNullable();
    /**
     * One state change: the resource and the database transaction that committed it, so a state
     * reached again later (an installment overdue again after a reversal) is a new event, and a
     * change is never two.
     */
    t.text('change_key').notNullable();
    /** The resource's row as committed; rendered as the API answers it when delivered. */
    t.jsonb('snapshot').notNullable();
    t.timestamp('occurred_at', { useTz: true }).notNullable().defaultTo(knex.raw('clock_timestamp()'));
    /** Set once its deliveries exist (the dispatcher's mark). */
    t.timestamp('dispatched_at', { useTz: true });
    t.unique(['type', 'change_key']);
    t.index(['resource_id']);
    t.index(['organization_id', 'occurred_at', 'id']);
  });
  await knex.raw(
    'create index webhook_events_undispatched on webhook_events (occurred_at) where dispatched_at is null',
  );

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('event_id').notNullable().references('webhook_events.id').onDelete('CASCADE');
    t.uuid('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('status').notNullable().defaultTo('PENDING').checkIn(['PENDING', 'SUCCEEDED', 'FAILED']);
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('last_status_code');
    t.text('last_error');
    /** Set once its workflow was started; the dispatcher starts the ones still without. */
    t.timestamp('workflow_started_at', { useTz: true });
    /** Counts resends: only the run of the current generation may end it (a replaced run's late step may not). */
    t.integer('generation').notNullable().defaultTo(0);
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['event_id', 'endpoint_id']);
    t.index(['endpoint_id', 'created_at', 'id']);
  });
  await knex.raw(
    'create index webhook_deliveries_unstarted on webhook_deliveries (created_at) where workflow_started_at is null',
  );

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.bigIncrements('id');
    t.uuid('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    /** The delivery's workflow run and its activity attempt: a retried step records once. */
    t.text('run_id').notNullable();
    t.integer('attempt').notNullable();
    t.timestamp('attempted_at', { useTz: true }).notNullable();
    t.integer('status_code');
    t.integer('duration_ms').notNullable();
    t.text('organization_id').notNullable().references('organizations.id');
    /** Why it failed in our words (timeout, connection refused, address refused...), not the receiver's. */
    t.text('error');
    /** The start of the receiver's answer, for operators. */
    t.text('response_body');
    t.unique(['delivery_id', 'run_id', 'attempt']);
  });

  // The outbox's writers: one trigger per resource whose state changes are events; a snapshot keeps
  // what its event renders, nothing more (no phone number, no callback token). No NOTIFY: it
  // would serialise every notifying commit on one lock; the dispatcher polls a partial index.
  await knex.raw(`
    create function webhook_emit(organization text, event_type text, resource text, snapshot jsonb) returns void
    language plpgsql as $$
    begin
      insert into webhook_events (organization_id, type, resource_id, change_key, snapshot)
      values (organization, event_type, resource, resource || '@' || txid_current(), snapshot)
      on conflict (type, change_key) do nothing;
    end $$`);
  await knex.raw(`
    create function webhook_transaction_events() returns trigger language plpgsql as $$
    begin
      if new.status in ('POSTED', 'FAILED') and (tg_op = 'INSERT' or old.status is distinct from new.status) then
        perform webhook_emit(new.organization_id,
          case new.status when 'POSTED' then 'transaction.posted' else 'transaction.failed' end,
          new.id::text, jsonb_build_object('id', new.id, 'resource_id', new.resource_id, 'status', new.status,
            'mobilemoney_transaction_id', new.mobilemoney_transaction_id, 'amount', new.amount,
            'fee_amount', new.fee_amount, 'currency', new.currency, 'failure_reason', new.failure_reason,
            'transacted_at', new.transacted_at, 'confirmed_at', new.confirmed_at, 'posted_at', new.posted_at,
            'failed_at', new.failed_at, 'details', new.details));
      end if;
      return null;
    end $$`);
  await knex.raw(`create trigger transactions_webhook_events after insert or update of status on transactions
    for each row execute function webhook_transaction_events()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger if exists transactions_webhook_events on transactions');
  await knex.raw('drop function if exists webhook_transaction_events()');
  await knex.raw('drop function if exists webhook_emit(text, text, text, jsonb)');
  await knex.schema.dropTable('webhook_attempts');
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_events');
  await knex.schema.dropTable('webhook_endpoints');
}

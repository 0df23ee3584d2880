import type { Knex } from 'knex';

/**
 * Transaction Status queries a send-money run asks about its payout, each with the unguessable
 * token of its own ResultURL (so a leaked payout result URL cannot answer for the provider) and
 * the query's ids as the provider answered them (a status Result must carry them). Their
 * Results and queue timeouts are stored with the other callbacks, as kinds of their own.
 */
const KINDS = ['STK', 'B2C_RESULT', 'B2C_TIMEOUT'];
const STATUS_KINDS = ['B2C_STATUS', 'B2C_STATUS_TIMEOUT'];

const kindCheck = (kinds: string[]) =>
  `alter table mobile_money_callbacks drop constraint if exists mobile_money_callbacks_kind_check,
     add constraint mobile_money_callbacks_kind_check check (kind in (${kinds.map((k) => `'${k}'`).join(', ')}))`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payout_status_queries', (t) => {
    t.uuid('id').primary();
    t.uuid('transaction_id').notNullable().references('transactions.id');
    t.text('organization_id').notNullable().references('organizations.id');
    /** Compared in constant time; never logged. */
    t.text('token').notNullable();
    t.timestamp('asked_at', { useTz: true }).notNullable();
    /** The query's own ids, from the provider's answer (null until it came). */
    t.text('conversation_id');
    t.text('originator_conversation_id');
    /** What its first checked Result said (completed, failed, not_found, pending, query_failed): one answer per query. */
    t.text('answered');
    t.index(['transaction_id']);
    /** The callback-retention schedule deletes them by age. */
    t.index(['asked_at']);
  });
  await knex.raw(kindCheck([...KINDS, ...STATUS_KINDS]));
}

export async function down(knex: Knex): Promise<void> {
  await knex('mobile_money_callbacks').whereIn('kind', STATUS_KINDS).delete();
  await knex.raw(kindCheck(KINDS));
  await knex.schema.dropTable('payout_status_queries');
}

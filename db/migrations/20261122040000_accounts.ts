import type { Knex } from 'knex';

/**
 * Customers' accounts: a current account and a credit (lending) account per user. Balances are
 * not stored here: they are derived from the double-entry ledger that comes with mobile money.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.text('type').notNullable().checkIn(['CURRENT', 'CREDIT']);
    t.text('currency').notNullable().defaultTo('KES');
    t.text('status').notNullable().defaultTo('ACTIVE').checkIn(['PENDING_ACTIVATION', 'ACTIVE', 'SUSPENDED', 'CLOSED']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['user_id', 'type']);
    t.index(['organization_id', 'user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('accounts');
}

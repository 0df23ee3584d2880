import type { Knex } from 'knex';

/**
 * Mobile-money transactions (push-prompt collections and send-money payouts) and every callback
 * the provider sent, as received. Money columns are integer minor units (cents of KES).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('transactions', (t) => {
    t.uuid('id').primary();
    /** `trx_<opaque>`, the spec's resource_id. */
    t.text('resource_id').notNullable().unique();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.text('type').notNullable().checkIn(['STK_PUSH', 'SEND_MONEY']);
    t.text('status').notNullable().defaultTo('PENDING').checkIn(['PENDING', 'CONFIRMED', 'POSTED', 'FAILED']);
    t.bigInteger('amount').notNullable();
    t.bigInteger('fee_amount').notNullable().defaultTo(0);
    t.text('currency').notNullable();
    /** International format, `+254...`. */
    t.text('mobile_number').notNullable();
    t.jsonb('details').notNullable().defaultTo('{}');
    /** The unguessable token in the callback URLs (callbacks are not signed); compared in constant time. */
    t.text('callback_token').notNullable();
    /** Set before the push or payout request leaves, so a retry knows it may have reached the provider. */
    t.timestamp('provider_request_attempted_at', { useTz: true });
    t.text('checkout_request_id').unique();
    t.text('merchant_request_id');
    t.text('conversation_id');
    /** The provider's receipt: unique, so one payment can never be recorded twice. */
    t.text('mobilemoney_transaction_id').unique();
    t.text('result_code');
    t.text('failure_reason');
    t.timestamp('transacted_at', { useTz: true });
    t.timestamp('confirmed_at', { useTz: true });
    t.timestamp('posted_at', { useTz: true });
    t.timestamp('failed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id', 'created_at']);
    t.index(['organization_id', 'status']);
  });

  await knex.schema.createTable('mobile_money_callbacks', (t) => {
    t.bigIncrements('id');
    t.text('kind').notNullable().checkIn(['STK', 'B2C_RESULT', 'B2C_TIMEOUT']);
    /** As named in the URL; may name no transaction when the URL was guessed. */
    t.text('transaction_ref');
    t.jsonb('body');
    t.text('raw').notNullable();
    /** What we did with it: SIGNALLED, LATE, MISMATCH, BAD_TOKEN, MALFORMED. */
    t.text('disposition').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['transaction_ref']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('mobile_money_callbacks');
  await knex.schema.dropTable('transactions');
}

import type { Knex } from 'knex';

/**
 * A current account is ACTIVE only once the bank onboarded its owner (activation, spec 4.7): its
 * customer and account numbers are on it. Current accounts opened ACTIVE before without them
 * (the old sign-up, seed and CLI did so) wait for their activation now, as a new one does.
 */
export async function up(knex: Knex): Promise<void> {
  await knex('accounts')
    .where({ type: 'CURRENT', status: 'ACTIVE' })
    .where((q) => q.whereNull('bank_customer_id').orWhereNull('bank_account_number'))
    .update({ status: 'PENDING_ACTIVATION' });
  await knex.raw(`alter table accounts add constraint accounts_active_current_at_bank
    check (type <> 'CURRENT' or status <> 'ACTIVE' or (bank_customer_id is not null and bank_account_number is not null))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table accounts drop constraint accounts_active_current_at_bank');
}

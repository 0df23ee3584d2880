import type { Knex } from 'knex';

/**
 * A change claims its new number when it goes to the bank (`bank_requested_at`): two users'
 * changes of one number, both proven, could otherwise both reach the bank, which would then hold
 * the number for two customers while only one of them can complete here. The claim is taken under
 * the number's lock and holds while the bank may still act on it: its change PROCESSING, or
 * REJECTED without the bank's answer (BANK_NO_DECISION, BANK_UNAVAILABLE); the number's index
 * (organization, new number) finds it. Changes already PROCESSING when this runs may be at the
 * bank: they hold their claim too.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phone_changes', (t) => {
    t.timestamp('bank_requested_at', { useTz: true });
  });
  await knex.raw(
    `update phone_changes set bank_requested_at = coalesce(confirmed_at, updated_at)
      where status = 'PROCESSING' and bank_requested_at is null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phone_changes', (t) => {
    t.dropColumn('bank_requested_at');
  });
}

import type { Knex } from 'knex';

/**
 * A change claims its new number when it goes to the bank (`bank_requested_at`): two users'
 * changes of one number, both proven, could otherwise both reach the bank, which would then hold
 * the number for two customers while only one of them can complete here. The claim is taken under
 * the number's lock and counts while its change is PROCESSING (the index finds such a rival).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('phone_changes', (t) => {
    t.timestamp('bank_requested_at', { useTz: true });
  });
  await knex.raw(
    `create index phone_changes_number_at_bank on phone_changes (organization_id, new_phone_number)
      where status = 'PROCESSING' and bank_requested_at is not null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists phone_changes_number_at_bank');
  await knex.schema.alterTable('phone_changes', (t) => {
    t.dropColumn('bank_requested_at');
  });
}

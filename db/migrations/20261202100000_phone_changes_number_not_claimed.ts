import type { Knex } from 'knex';

/**
 * A number is no longer claimed by one open change in an organization: that index let a request
 * tell whether another user was moving to a number (issue 28). Whether the number is free is
 * decided when the bank is asked and again when the change completes, under a lock on the number.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists phone_changes_number_open');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `create unique index phone_changes_number_open on phone_changes (organization_id, new_phone_number)
      where status in ('INITIALIZING', 'AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION', 'PROCESSING')`,
  );
}

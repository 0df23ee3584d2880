import type { Knex } from 'knex';

/**
 * Every change to a KYC application is announced on the `kyc_application_changed` channel
 * (payload: its id), after commit, so API instances can keep application statuses in memory and
 * drop one the moment it changes (db/kyc/hot-reads.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function kyc_application_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('kyc_application_changed', old.id::text);
      return null;
    end $$`);
  await knex.raw(`
    create trigger kyc_application_changed after update or delete on kyc_applications
      for each row execute function kyc_application_changed()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger kyc_application_changed on kyc_applications');
  await knex.raw('drop function kyc_application_changed()');
}

import type { Knex } from 'knex';

/**
 * A provider job belongs to one application: an applicant cannot report (and so be verified on)
 * a job another application holds. Provider job ids are the provider's, global across our
 * organizations (one partner account), hence a global index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'create unique index kyc_applications_provider_job_id_unique on kyc_applications (provider_job_id) where provider_job_id is not null',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index kyc_applications_provider_job_id_unique');
}

import type { Knex } from 'knex';

/**
 * The X-Provider-Api-Versions values GET verification was sent (spec 4.2: "Sending different
 * values to GET and POST gets the capture rejected"), as a set in one canonical text: lower-case,
 * sorted, distinct, comma-separated; '' when the header was omitted or empty. Null until a GET
 * reads the requirements (the POST then negotiates on its own), and on applications whose GET ran
 * before this column: those keep being compared by `negotiated_api_version`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kyc_applications', (t) => {
    t.text('sent_api_versions');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('kyc_applications', (t) => {
    t.dropColumn('sent_api_versions');
  });
}

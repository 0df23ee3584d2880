import type { Knex } from 'knex';

/**
 * The dispatcher counts each organization's runs that have started and not yet made an attempt
 * (WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION, issue 54). This partial index holds just those rows, so
 * the count reads a handful of index entries however many deliveries an organization has.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create index webhook_deliveries_untried on webhook_deliveries (organization_id)
      where status = 'PENDING' and workflow_started_at is not null and tried_at is null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists webhook_deliveries_untried');
}

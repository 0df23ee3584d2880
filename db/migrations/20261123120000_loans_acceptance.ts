import type { Knex } from 'knex';

/**
 * Loans, after review: one running loan per borrower (whatever the product), enforced by the
 * database; and the acceptance's own id kept on the application, so a retried apply with the
 * same Idempotency-Key is answered with the loan it made even after its first answer was lost.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create unique index loans_one_running_per_borrower on loans (organization_id, user_id)
      where status in ('PENDING_DISBURSEMENT', 'ACTIVE')`,
  );
  await knex.schema.alterTable('loan_applications', (t) => {
    t.text('accepted_by');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('loan_applications', (t) => {
    t.dropColumn('accepted_by');
  });
  await knex.raw('drop index loans_one_running_per_borrower');
}

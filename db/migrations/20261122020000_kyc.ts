import type { Knex } from 'knex';

/**
 * KYC applications, their subjects (identity fields), the document images the service stores
 * (workflows and activities pass them by reference, never as payloads), and every provider
 * callback as received.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('kyc_applications', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.text('status').notNullable().defaultTo('DRAFT');
    t.text('channel');
    /** The version the requirements were read for (GET verification); a POST must match it. */
    t.text('negotiated_api_version');
    /** The provider API version the job was started on, kept for the job's life. */
    t.text('api_version');
    /** Our job id (the provider's partner_params.job_id). */
    t.uuid('job_id');
    t.text('provider_job_id');
    t.text('outcome');
    t.text('result_code');
    t.text('reason');
    t.boolean('needs_review').notNullable().defaultTo(false);
    t.integer('resubmission_count').notNullable().defaultTo(0);
    t.timestamp('reapply_blocked_until', { useTz: true });
    t.timestamp('submitted_at', { useTz: true });
    /** Set before a server-side submission reaches the provider, so a retry knows it may have. */
    t.timestamp('submission_attempted_at', { useTz: true });
    t.timestamp('verification_completed_at', { useTz: true });
    t.timestamp('provider_checked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id', 'status', 'submitted_at']);
    t.index(['organization_id', 'user_id']);
  });
  // One active application per user.
  await knex.raw(
    "create unique index kyc_applications_one_active on kyc_applications (user_id) where status in ('DRAFT', 'ID_VERIFICATION_PENDING')",
  );

  await knex.schema.createTable('kyc_subjects', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id').unique();
    t.text('type').notNullable().defaultTo('individual');
    t.text('name');
    t.text('email');
    t.text('phone');
    t.text('id_number');
    t.date('date_of_birth');
    t.text('gender');
    t.text('identity_type');
    t.text('country');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('kyc_documents', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('application_id').notNullable().references('kyc_applications.id');
    t.text('kind').notNullable().checkIn(['SELFIE', 'DOCUMENT_FRONT', 'DOCUMENT_BACK', 'LIVENESS']);
    t.integer('position').notNullable().defaultTo(0);
    t.text('content_type').notNullable();
    t.binary('content').notNullable();
    t.text('sha256').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['application_id']);
  });

  await knex.schema.createTable('kyc_callback_events', (t) => {
    t.bigIncrements('id');
    t.text('api_version').notNullable();
    /** The provider's event identity; a duplicate delivery is recorded once. */
    t.text('event_id').notNullable().unique();
    t.uuid('application_id');
    t.text('raw_body').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['kyc_callback_events', 'kyc_documents', 'kyc_subjects', 'kyc_applications'])
    await knex.schema.dropTable(table);
}

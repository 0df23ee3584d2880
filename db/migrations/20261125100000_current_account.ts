import type { Knex } from 'knex';

/**
 * Current-account self-service (spec 2, 4.7): each row is the projection of one workflow
 * (`account-activation/<id>`, `email-verification/<id>`, `phone-change/<id>`), which owns its
 * codes, attempts and deadlines; the rows answer the GETs. No code is stored anywhere: the
 * workflows hold an HMAC of each one-time code, and e-mail links are stored as a SHA-256 of their
 * token.
 *
 * - current_account_activations: at most one open (INITIALIZING, AWAITING_OTP, ONBOARDING) per
 *   user; the bank's customer number and account number once COMPLETED.
 * - email_verifications: one link per row; at most one open (INITIALIZING, SENT) per user.
 * - phone_changes: old and new numbers; at most one open per user, and per new number in an
 *   organization.
 * - otp_sends: every code sent (by SMS or e-mail), for the hourly limits per user and per
 *   destination, and the SMS gateway's delivery reports.
 * - users.email_verified_at; accounts.bank_customer_id and bank_account_number (the bank's, once
 *   the current account is opened there).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.timestamp('email_verified_at', { useTz: true });
  });
  await knex.schema.alterTable('accounts', (t) => {
    t.text('bank_customer_id');
    t.text('bank_account_number');
  });

  await knex.schema.createTable('current_account_activations', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.text('status')
      .notNullable()
      .defaultTo('INITIALIZING')
      .checkIn(['INITIALIZING', 'AWAITING_OTP', 'ONBOARDING', 'COMPLETED', 'REJECTED']);
    t.text('channel').notNullable().defaultTo('SMS').checkIn(['SMS']);
    t.text('rejection_reason');
    t.text('bank_customer_id');
    t.text('bank_account_number');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('otp_sent_at', { useTz: true });
    t.timestamp('otp_confirmed_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('rejected_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id', 'user_id', 'created_at']);
  });
  await knex.raw(
    `create unique index current_account_activations_one_open on current_account_activations (user_id)
      where status in ('INITIALIZING', 'AWAITING_OTP', 'ONBOARDING')`,
  );
  await knex.raw(`alter table current_account_activations add constraint current_account_activations_reason
    check ((status = 'REJECTED') = (rejection_reason is not null))`);

  await knex.schema.createTable('email_verifications', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.text('email').notNullable();
    t.text('status')
      .notNullable()
      .defaultTo('INITIALIZING')
      .checkIn(['INITIALIZING', 'SENT', 'VERIFIED', 'EXPIRED', 'FAILED']);
    t.text('failure_reason');
    /** SHA-256 of the link's token while it can be used; cleared once used or expired (single use). */
    t.binary('token_hash');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('verified_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id', 'user_id', 'created_at']);
  });
  await knex.raw(
    `create unique index email_verifications_one_open on email_verifications (user_id)
      where status in ('INITIALIZING', 'SENT')`,
  );

  await knex.schema.createTable('phone_changes', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('account_id').notNullable().references('accounts.id');
    t.text('old_phone_number').notNullable();
    t.text('new_phone_number').notNullable();
    t.text('authorization_channel').notNullable().checkIn(['OLD_MOBILE', 'EMAIL']);
    t.text('status')
      .notNullable()
      .defaultTo('INITIALIZING')
      .checkIn([
        'INITIALIZING',
        'AWAITING_AUTHORIZATION',
        'AWAITING_CONFIRMATION',
        'PROCESSING',
        'COMPLETED',
        'REJECTED',
      ]);
    t.text('rejection_reason');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('authorized_at', { useTz: true });
    t.timestamp('confirmed_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('rejected_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id', 'user_id', 'created_at']);
    t.index(['organization_id', 'new_phone_number']);
  });
  await knex.raw(
    `create unique index phone_changes_one_open on phone_changes (user_id)
      where status in ('INITIALIZING', 'AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION', 'PROCESSING')`,
  );
  // A number is claimed by at most one open change in an organization: two users cannot race onto it.
  await knex.raw(
    `create unique index phone_changes_number_open on phone_changes (organization_id, new_phone_number)
      where status in ('INITIALIZING', 'AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION', 'PROCESSING')`,
  );
  await knex.raw(`alter table phone_changes add constraint phone_changes_reason
    check ((status = 'REJECTED') = (rejection_reason is not null))`);
  await knex.raw('create index users_organization_phone on users (organization_id, phone_number)');

  await knex.schema.createTable('otp_sends', (t) => {
    t.bigIncrements('id');
    t.text('organization_id').notNullable().references('organizations.id');
    t.uuid('user_id').notNullable().references('users.id');
    /** ACTIVATION, PHONE_CHANGE_AUTHORIZATION, PHONE_CHANGE_CONFIRMATION, EMAIL_VERIFICATION. */
    t.text('purpose').notNullable();
    /** The activation, change or verification the code is for. */
    t.uuid('reference_id').notNullable();
    t.text('channel').notNullable().checkIn(['SMS', 'EMAIL']);
    /** E.164 number or e-mail address. */
    t.text('destination').notNullable();
    t.text('provider_message_id');
    t.text('delivery_status');
    t.text('delivery_failure_reason');
    t.timestamp('sent_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('delivery_reported_at', { useTz: true });
    t.index(['user_id', 'sent_at']);
    t.index(['destination', 'sent_at']);
    t.unique(['provider_message_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('otp_sends');
  await knex.raw('drop index users_organization_phone');
  await knex.schema.dropTable('phone_changes');
  await knex.schema.dropTable('email_verifications');
  await knex.schema.dropTable('current_account_activations');
  await knex.schema.alterTable('accounts', (t) => {
    t.dropColumn('bank_customer_id');
    t.dropColumn('bank_account_number');
  });
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('email_verified_at');
  });
}

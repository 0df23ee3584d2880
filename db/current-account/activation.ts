import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The queries of a current-account activation, whose run is
 * workflows/current-account/activation.ts. The API creates and reads the row, and the run's
 * activities record each status it reaches. It also finds the caller's current account, which an
 * activation starts from.
 */

/** Statuses of a current-account activation, and the timestamp each sets (README, Current account). */
export const ActivationStatus = {
  /** Started; the code is being sent. created_at. */
  INITIALIZING: 'INITIALIZING',
  /** The code went out by SMS. otp_sent_at (again on each resend). */
  AWAITING_OTP: 'AWAITING_OTP',
  /** The code was confirmed; the bank is opening the account. otp_confirmed_at. */
  ONBOARDING: 'ONBOARDING',
  /** The bank opened it; the current account is ACTIVE. completed_at. */
  COMPLETED: 'COMPLETED',
  /** Ended without an account, rejection_reason saying why. rejected_at. */
  REJECTED: 'REJECTED',
} as const;
export type ActivationStatus = (typeof ActivationStatus)[keyof typeof ActivationStatus];
export const OPEN_ACTIVATION: ActivationStatus[] = ['INITIALIZING', 'AWAITING_OTP', 'ONBOARDING'];

export interface ActivationRow {
  id: string;
  organization_id: string;
  user_id: string;
  account_id: string;
  status: ActivationStatus;
  channel: string;
  rejection_reason: string | null;
  bank_customer_id: string | null;
  bank_account_number: string | null;
  created_at: Date;
  otp_sent_at: Date | null;
  otp_confirmed_at: Date | null;
  completed_at: Date | null;
  rejected_at: Date | null;
}

/** The user's current account, whatever its status. */
export function findCurrentAccount(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<{ id: string; status: string; bank_customer_id: string | null } | undefined> {
  return db('accounts')
    .where({ organization_id: organizationId, user_id: userId, type: 'CURRENT' })
    .first('id', 'status', 'bank_customer_id');
}

/** Who an activation's code goes to: its user and the user's mobile number. */
export function findActivationRecipient(
  db: Knex,
  organizationId: string,
  id: string,
): Promise<{ user_id: string; phone_number: string | null } | undefined> {
  return db('current_account_activations as a')
    .join('users as u', 'u.id', 'a.user_id')
    .where({ 'a.organization_id': organizationId, 'a.id': id })
    .first('u.id as user_id', 'u.phone_number');
}

/** The user's most recent activation, in any state. */
export function findLatestActivation(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<ActivationRow | undefined> {
  return db('current_account_activations')
    .where({ organization_id: organizationId, user_id: userId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .first();
}

export function findActivation(
  db: Knex,
  organizationId: string,
  userId: string,
  id: string,
): Promise<ActivationRow | undefined> {
  return db('current_account_activations').where({ organization_id: organizationId, user_id: userId, id }).first();
}

/**
 * A new activation, INITIALIZING; or, when the user has one open (the partial unique index), that
 * one: `created` says which.
 */
export async function createActivation(
  db: Knex,
  organizationId: string,
  userId: string,
  accountId: string,
  now: Date,
): Promise<{ row: ActivationRow; created: boolean }> {
  const [inserted] = await db('current_account_activations')
    .insert({
      id: randomUUID(),
      organization_id: organizationId,
      user_id: userId,
      account_id: accountId,
      created_at: now,
      updated_at: now,
    })
    // The only conflict a fresh id can meet: the user's open activation (one at a time).
    .onConflict()
    .ignore()
    .returning('*');
  if (inserted) return { row: inserted as ActivationRow, created: true };
  const open = await db('current_account_activations')
    .where({ organization_id: organizationId, user_id: userId })
    .whereIn('status', OPEN_ACTIVATION)
    .first();
  if (!open) throw new Error('an open activation vanished while starting another');
  return { row: open as ActivationRow, created: false };
}

/**
 * Earlier activations of the same account whose bank outcome stayed unknown (the bank did not
 * decide, or could not be reached, before the run's deadline): the bank may hold them.
 */
export async function uncertainOnboardings(db: Knex, organizationId: string, activationId: string): Promise<string[]> {
  const rows = await db('current_account_activations as earlier')
    .join('current_account_activations as current', 'current.account_id', 'earlier.account_id')
    .where({ 'current.organization_id': organizationId, 'current.id': activationId })
    .whereNot('earlier.id', activationId)
    .whereIn('earlier.rejection_reason', ['BANK_NO_DECISION', 'BANK_UNAVAILABLE'])
    .orderBy('earlier.created_at')
    .select('earlier.id');
  return rows.map((row: { id: string }) => row.id);
}

/** Forgets an activation whose run could not be started (nothing was sent). */
export async function dropInitializingActivation(db: Knex, organizationId: string, id: string): Promise<void> {
  await db('current_account_activations').where({ organization_id: organizationId, id, status: 'INITIALIZING' }).del();
}

/**
 * The run's progress, as its steps record it: each transition only from the states before it, so
 * a step that runs again, or late, never moves an activation backwards.
 */
export async function recordActivationStatus(
  db: Knex,
  organizationId: string,
  id: string,
  change:
    | { status: 'AWAITING_OTP'; at: Date }
    | { status: 'ONBOARDING'; at: Date }
    | { status: 'REJECTED'; at: Date; reason: string },
): Promise<void> {
  const from: Record<typeof change.status, ActivationStatus[]> = {
    AWAITING_OTP: ['INITIALIZING', 'AWAITING_OTP'],
    ONBOARDING: ['INITIALIZING', 'AWAITING_OTP'],
    REJECTED: OPEN_ACTIVATION,
  };
  const fields =
    change.status === 'AWAITING_OTP'
      ? { otp_sent_at: change.at }
      : change.status === 'ONBOARDING'
        ? { otp_confirmed_at: change.at }
        : { rejected_at: change.at, rejection_reason: change.reason };
  await db('current_account_activations')
    .where({ organization_id: organizationId, id })
    .whereIn('status', from[change.status])
    .update({ status: change.status, ...fields, updated_at: change.at });
}

/**
 * The bank opened the account: the activation COMPLETED and the current account ACTIVE with the
 * bank's numbers, in one transaction (again: nothing changes).
 */
export async function completeActivation(
  db: Knex,
  organizationId: string,
  id: string,
  bank: { customerId: string; accountNumber: string | null },
  now: Date,
): Promise<void> {
  await db.transaction(async (trx) => {
    const [row] = await trx('current_account_activations')
      .where({ organization_id: organizationId, id, status: 'ONBOARDING' })
      .update({
        status: 'COMPLETED',
        completed_at: now,
        bank_customer_id: bank.customerId,
        bank_account_number: bank.accountNumber,
        updated_at: now,
      })
      .returning(['account_id']);
    if (!row) return;
    await trx('accounts')
      .where({ organization_id: organizationId, id: row.account_id, type: 'CURRENT' })
      .update({ status: 'ACTIVE', bank_customer_id: bank.customerId, bank_account_number: bank.accountNumber });
  });
}

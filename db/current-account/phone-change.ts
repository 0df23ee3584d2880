import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The queries of a mobile-number change, whose run is
 * workflows/current-account/phone-change.ts. The API creates and reads the row, and the run's
 * activities record each status it reaches.
 */

/** Statuses of a mobile-number change, and the timestamp each sets (README, Current account). */
export const PhoneChangeStatus = {
  /** Started; the owner's authorization code is being sent. created_at. */
  INITIALIZING: 'INITIALIZING',
  /** The authorization code went to the old mobile or the verified e-mail. */
  AWAITING_AUTHORIZATION: 'AWAITING_AUTHORIZATION',
  /** Authorized; a code went to the new mobile. authorized_at. */
  AWAITING_CONFIRMATION: 'AWAITING_CONFIRMATION',
  /** The new number is proven; the bank is changing it. confirmed_at. */
  PROCESSING: 'PROCESSING',
  /** The bank changed it, and so did we, in the same transaction. completed_at. */
  COMPLETED: 'COMPLETED',
  /** Ended without a change, rejection_reason saying why. rejected_at. */
  REJECTED: 'REJECTED',
} as const;
export type PhoneChangeStatus = (typeof PhoneChangeStatus)[keyof typeof PhoneChangeStatus];
const OPEN: PhoneChangeStatus[] = ['INITIALIZING', 'AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION', 'PROCESSING'];

export interface PhoneChangeRow {
  id: string;
  organization_id: string;
  user_id: string;
  account_id: string;
  old_phone_number: string;
  new_phone_number: string;
  authorization_channel: 'OLD_MOBILE' | 'EMAIL';
  status: PhoneChangeStatus;
  rejection_reason: string | null;
  created_at: Date;
  authorized_at: Date | null;
  confirmed_at: Date | null;
  completed_at: Date | null;
  rejected_at: Date | null;
}

export function findPhoneChange(
  db: Knex,
  organizationId: string,
  userId: string,
  id: string,
): Promise<PhoneChangeRow | undefined> {
  return db('phone_changes').where({ organization_id: organizationId, user_id: userId, id }).first();
}

/** Who a change's codes go to: the owner's e-mail and old number, and the new number. */
export function findPhoneChangeRecipients(
  db: Knex,
  organizationId: string,
  id: string,
): Promise<
  | (Pick<PhoneChangeRow, 'user_id' | 'old_phone_number' | 'new_phone_number' | 'authorization_channel'> & {
      email: string;
    })
  | undefined
> {
  return db('phone_changes as c')
    .join('users as u', 'u.id', 'c.user_id')
    .where({ 'c.organization_id': organizationId, 'c.id': id })
    .first('c.user_id', 'u.email', 'c.old_phone_number', 'c.new_phone_number', 'c.authorization_channel');
}

/** What the bank is asked about a change: the new number, and the bank's customer its account is. */
export function findPhoneChangeAtBank(
  db: Knex,
  organizationId: string,
  id: string,
): Promise<{ user_id: string; new_phone_number: string; bank_customer_id: string | null } | undefined> {
  return db('phone_changes as c')
    .join('accounts as a', 'a.id', 'c.account_id')
    .where({ 'c.organization_id': organizationId, 'c.id': id })
    .first('c.user_id', 'c.new_phone_number', 'a.bank_customer_id');
}

/** Whether another user of the organization holds `phone`. */
export async function phoneHeldByAnother(
  db: Knex | Knex.Transaction,
  organizationId: string,
  userId: string,
  phone: string,
): Promise<boolean> {
  const row = await db('users')
    .where({ organization_id: organizationId, phone_number: phone })
    .whereNot({ id: userId })
    .first('id');
  return row !== undefined;
}

/** The advisory lock of one number in an organization: its claims and completions take it. */
const lockNumber = (trx: Knex.Transaction, organizationId: string, phone: string) =>
  trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`phone:${organizationId}:${phone}`]);

/** Rejections that leave the bank's answer unknown: the bank may still change the number. */
const UNDECIDED = ['BANK_NO_DECISION', 'BANK_UNAVAILABLE'];

/**
 * Before the bank is asked to move `phone` to this change's customer: the change claims the
 * number, unless another user holds it or another user's change claimed it and the bank may
 * still act on that one (PROCESSING, or REJECTED without the bank's answer: an operator releases
 * such a claim once the bank says it did not change the number; see README). Under the number's
 * lock, so two changes of one number never both reach the bank; a rerun of the same step finds
 * its own claim and goes on.
 */
export async function claimNumberForBank(
  db: Knex,
  organizationId: string,
  id: string,
  change: { user_id: string; new_phone_number: string },
  now: Date,
): Promise<'CLAIMED' | 'NUMBER_TAKEN'> {
  return db.transaction(async (trx) => {
    await lockNumber(trx, organizationId, change.new_phone_number);
    if (await phoneHeldByAnother(trx, organizationId, change.user_id, change.new_phone_number)) return 'NUMBER_TAKEN';
    const rival = await trx('phone_changes')
      .where({ organization_id: organizationId, new_phone_number: change.new_phone_number })
      .whereNotNull('bank_requested_at')
      .where((claim) =>
        claim
          .where({ status: 'PROCESSING' })
          .orWhere((undecided) => undecided.where({ status: 'REJECTED' }).whereIn('rejection_reason', UNDECIDED)),
      )
      .whereNot({ id })
      .first('id');
    if (rival) return 'NUMBER_TAKEN';
    await trx('phone_changes')
      .where({ organization_id: organizationId, id })
      .whereNull('bank_requested_at')
      .update({ bank_requested_at: now });
    return 'CLAIMED';
  });
}

/**
 * A new change, or the user's open one (`created` says which). Other users' changes of the same
 * number may be open beside it: whether the number is free is decided when the bank is asked and
 * when the change completes, so a request never tells who holds a number.
 */
export async function createPhoneChange(
  db: Knex,
  organizationId: string,
  change: Pick<
    PhoneChangeRow,
    'user_id' | 'account_id' | 'old_phone_number' | 'new_phone_number' | 'authorization_channel'
  >,
  now: Date,
): Promise<{ row: PhoneChangeRow; created: boolean }> {
  const [inserted] = await db('phone_changes')
    .insert({ id: randomUUID(), organization_id: organizationId, ...change, created_at: now, updated_at: now })
    // The one conflict a fresh id can meet: the user's open change, answered instead.
    .onConflict()
    .ignore()
    .returning('*');
  if (inserted) return { row: inserted as PhoneChangeRow, created: true };
  const open = await db('phone_changes')
    .where({ organization_id: organizationId, user_id: change.user_id })
    .whereIn('status', OPEN)
    .first();
  // It ended between the two statements: make the new one now.
  if (!open) return createPhoneChange(db, organizationId, change, now);
  return { row: open as PhoneChangeRow, created: false };
}

export async function dropInitializingPhoneChange(db: Knex, organizationId: string, id: string): Promise<void> {
  await db('phone_changes').where({ organization_id: organizationId, id, status: 'INITIALIZING' }).del();
}

/** The run's progress; each transition only from the states before it (a rerun never moves it back). */
export async function recordPhoneChangeStatus(
  db: Knex,
  organizationId: string,
  id: string,
  change:
    | { status: 'AWAITING_AUTHORIZATION'; at: Date }
    | { status: 'AWAITING_CONFIRMATION'; at: Date }
    | { status: 'PROCESSING'; at: Date }
    | { status: 'REJECTED'; at: Date; reason: string },
): Promise<void> {
  const from: Record<typeof change.status, PhoneChangeStatus[]> = {
    AWAITING_AUTHORIZATION: ['INITIALIZING'],
    AWAITING_CONFIRMATION: ['INITIALIZING', 'AWAITING_AUTHORIZATION'],
    PROCESSING: ['INITIALIZING', 'AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION'],
    REJECTED: OPEN,
  };
  const fields =
    change.status === 'AWAITING_CONFIRMATION'
      ? { authorized_at: change.at }
      : change.status === 'PROCESSING'
        ? { confirmed_at: change.at }
        : change.status === 'REJECTED'
          ? { rejected_at: change.at, rejection_reason: change.reason }
          : {};
  await db('phone_changes')
    .where({ organization_id: organizationId, id })
    .whereIn('status', from[change.status])
    .update({ status: change.status, ...fields, updated_at: change.at });
}

/**
 * The bank changed the number: the user's phone and the change COMPLETED in one transaction,
 * unless another user took the number meanwhile (NUMBER_TAKEN; the change REJECTED). Changes of
 * one number in the organization are serialised by an advisory lock, so two users can never both
 * complete onto it.
 */
export async function completePhoneChange(
  db: Knex,
  organizationId: string,
  id: string,
  now: Date,
): Promise<'COMPLETED' | 'NUMBER_TAKEN' | 'NOT_PROCESSING'> {
  return db.transaction(async (trx) => {
    const change = await trx('phone_changes')
      .where({ organization_id: organizationId, id })
      .forUpdate()
      .first<PhoneChangeRow | undefined>();
    if (!change) return 'NOT_PROCESSING';
    if (change.status === 'COMPLETED') return 'COMPLETED';
    if (change.status !== 'PROCESSING') return 'NOT_PROCESSING';
    await lockNumber(trx, organizationId, change.new_phone_number);
    if (await phoneHeldByAnother(trx, organizationId, change.user_id, change.new_phone_number)) {
      await trx('phone_changes')
        .where({ id })
        .update({ status: 'REJECTED', rejection_reason: 'NUMBER_TAKEN', rejected_at: now, updated_at: now });
      return 'NUMBER_TAKEN';
    }
    await trx('users')
      .where({ organization_id: organizationId, id: change.user_id })
      .update({ phone_number: change.new_phone_number });
    await trx('phone_changes').where({ id }).update({ status: 'COMPLETED', completed_at: now, updated_at: now });
    return 'COMPLETED';
  });
}

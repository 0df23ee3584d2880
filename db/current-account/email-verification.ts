import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The queries of an e-mail verification, whose run is
 * workflows/current-account/email-verification.ts. The API creates and reads the row, and the run's
 * activities record each status it reaches.
 */

/** Statuses of an e-mail verification, and the timestamp each sets (README, Current account). */
export const EmailVerificationStatus = {
  /** Started; the link is being sent. created_at. */
  INITIALIZING: 'INITIALIZING',
  /** The link went out and can be used until expires_at. sent_at, expires_at. */
  SENT: 'SENT',
  /** The link was used: the user's e-mail is verified. verified_at. */
  VERIFIED: 'VERIFIED',
  /** Not used in time. updated_at. */
  EXPIRED: 'EXPIRED',
  /** The e-mail could not be sent, or too many wrong tokens (failure_reason). updated_at. */
  FAILED: 'FAILED',
} as const;
export type EmailVerificationStatus = (typeof EmailVerificationStatus)[keyof typeof EmailVerificationStatus];

export interface EmailVerificationRow {
  id: string;
  organization_id: string;
  user_id: string;
  email: string;
  status: EmailVerificationStatus;
  failure_reason: string | null;
  token_hash: Buffer | null;
  created_at: Date;
  sent_at: Date | null;
  expires_at: Date | null;
  verified_at: Date | null;
}

export function findEmailVerification(
  db: Knex,
  organizationId: string,
  userId: string,
  id: string,
): Promise<EmailVerificationRow | undefined> {
  return db('email_verifications').where({ organization_id: organizationId, user_id: userId, id }).first();
}

/** Who a verification's link goes to. */
export function findEmailVerificationRecipient(
  db: Knex,
  organizationId: string,
  id: string,
): Promise<{ user_id: string; email: string } | undefined> {
  return db('email_verifications').where({ organization_id: organizationId, id }).first('user_id', 'email');
}

/** A new verification of the user's e-mail, or the open one (`created` says which). */
export async function createEmailVerification(
  db: Knex,
  organizationId: string,
  userId: string,
  email: string,
  now: Date,
): Promise<{ row: EmailVerificationRow; created: boolean }> {
  const [inserted] = await db('email_verifications')
    .insert({
      id: randomUUID(),
      organization_id: organizationId,
      user_id: userId,
      email,
      created_at: now,
      updated_at: now,
    })
    // The only conflict a fresh id can meet: the user's open verification (one at a time).
    .onConflict()
    .ignore()
    .returning('*');
  if (inserted) return { row: inserted as EmailVerificationRow, created: true };
  const open = await db('email_verifications')
    .where({ organization_id: organizationId, user_id: userId })
    .whereIn('status', ['INITIALIZING', 'SENT'])
    .first();
  if (!open) throw new Error('an open e-mail verification vanished while starting another');
  return { row: open as EmailVerificationRow, created: false };
}

export async function dropInitializingEmailVerification(db: Knex, organizationId: string, id: string): Promise<void> {
  await db('email_verifications').where({ organization_id: organizationId, id, status: 'INITIALIZING' }).del();
}

/** The link was sent: the token's hash is kept until it is used or expires. */
export async function recordLinkSent(
  db: Knex,
  organizationId: string,
  id: string,
  sent: { tokenHash: Buffer; at: Date; expiresAt: Date },
): Promise<void> {
  await db('email_verifications')
    .where({ organization_id: organizationId, id })
    .whereIn('status', ['INITIALIZING', 'SENT'])
    .update({
      status: 'SENT',
      token_hash: sent.tokenHash,
      sent_at: sent.at,
      expires_at: sent.expiresAt,
      updated_at: sent.at,
    });
}

/** The link was used: VERIFIED and the user's e-mail verified, in one transaction; the token forgotten (single use). */
export async function markEmailVerified(db: Knex, organizationId: string, id: string, now: Date): Promise<void> {
  await db.transaction(async (trx) => {
    const [row] = await trx('email_verifications')
      .where({ organization_id: organizationId, id, status: 'SENT' })
      .update({ status: 'VERIFIED', verified_at: now, token_hash: null, updated_at: now })
      .returning(['user_id', 'email']);
    if (!row) return;
    // Only the address that was verified: a user whose e-mail changed meanwhile stays unverified.
    await trx('users')
      .where({ organization_id: organizationId, id: row.user_id, email: row.email })
      .update({ email_verified_at: now });
  });
}

/** Ended without verifying (EXPIRED or FAILED); the token forgotten. */
export async function endEmailVerification(
  db: Knex,
  organizationId: string,
  id: string,
  end: { status: 'EXPIRED' | 'FAILED'; reason?: string; at: Date },
): Promise<void> {
  await db('email_verifications')
    .where({ organization_id: organizationId, id })
    .whereIn('status', ['INITIALIZING', 'SENT'])
    .update({ status: end.status, failure_reason: end.reason ?? null, token_hash: null, updated_at: end.at });
}

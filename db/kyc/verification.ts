import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isUniqueViolation } from '../knex';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import { KycStatus } from '../../domain/kyc/status';
import type { KycApplicationRow } from './applications';
import { type NewKycDocument, replaceDocuments } from './documents';
import { type KycSubjectFields, upsertSubject } from './subjects';

/** An application's verification: its submission, what the provider run records, its completion. */

/** Applications that may take a (new) submission. */
const SUBMITTABLE = [KycStatus.DRAFT, KycStatus.REJECTED, KycStatus.EXPIRED];

export interface Submission {
  channel: string;
  apiVersion: ProviderApiVersion;
  /** server_upload: replaces the stored documents. */
  documents?: NewKycDocument[];
  /** server_upload: what the applicant states about the document. */
  subject?: KycSubjectFields;
}

/**
 * Moves a submittable application to ID_VERIFICATION_PENDING for a new job, with its documents
 * and subject, in one transaction; undefined when it is no longer submittable.
 */
export function beginSubmission(
  db: Knex,
  organizationId: string,
  application: KycApplicationRow,
  submission: Submission,
  now: Date,
): Promise<KycApplicationRow | undefined> {
  return db.transaction(async (trx) => {
    if (submission.documents) await replaceDocuments(trx, organizationId, application.id, submission.documents);
    if (submission.subject) await upsertSubject(trx, organizationId, application.user_id, submission.subject, now);
    const [row] = await trx('kyc_applications')
      .where({ organization_id: organizationId, id: application.id })
      .whereIn('status', SUBMITTABLE)
      .update({
        status: KycStatus.ID_VERIFICATION_PENDING,
        channel: submission.channel,
        api_version: submission.apiVersion,
        job_id: randomUUID(),
        provider_job_id: null,
        outcome: null,
        result_code: null,
        reason: null,
        needs_review: false,
        submitted_at: now,
        submission_attempted_at: null,
        provider_checked_at: null,
        verification_completed_at: null,
        resubmission_count:
          application.status === KycStatus.DRAFT ? application.resubmission_count : application.resubmission_count + 1,
        updated_at: now,
      })
      .returning('*');
    return row as KycApplicationRow | undefined;
  });
}

/** Puts the application's status and resubmission count back as `application` had them. */
export async function undoSubmission(
  db: Knex,
  organizationId: string,
  application: KycApplicationRow,
  now: Date,
): Promise<void> {
  await db('kyc_applications')
    .where({ organization_id: organizationId, id: application.id })
    .update({ status: application.status, resubmission_count: application.resubmission_count, updated_at: now });
}

/** What the verification run notes on its application as it goes. */
export type VerificationNotes = Partial<
  Pick<KycApplicationRow, 'submission_attempted_at' | 'provider_job_id' | 'provider_checked_at' | 'needs_review'>
>;

/** Notes `notes` on the application, whatever its status. */
export async function updateApplication(
  db: Knex,
  organizationId: string,
  id: string,
  notes: VerificationNotes,
  now: Date,
): Promise<void> {
  await db('kyc_applications')
    .where({ organization_id: organizationId, id })
    .update({ ...notes, updated_at: now });
}

/** Records the provider's job id unless one is recorded already. */
export async function setProviderJobIdOnce(
  db: Knex,
  organizationId: string,
  id: string,
  providerJobId: string,
  now: Date,
): Promise<boolean> {
  try {
    await db('kyc_applications')
      .where({ organization_id: organizationId, id })
      .whereNull('provider_job_id')
      .update({ provider_job_id: providerJobId, updated_at: now });
    return true;
  } catch (error) {
    // Another application holds this job (a unique index): it is not recorded here.
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/**
 * Whether another application holds this provider job. Deliberately across organizations:
 * provider job ids are the provider's, one namespace for our one partner account.
 */
export async function providerJobHeldElsewhere(
  db: Knex,
  providerJobId: string,
  applicationId: string,
): Promise<boolean> {
  const row = await db('kyc_applications')
    .where({ provider_job_id: providerJobId })
    .whereNot({ id: applicationId })
    .first('id');
  return row !== undefined;
}

export interface Verdict {
  status: typeof KycStatus.APPROVED | typeof KycStatus.REJECTED;
  outcome: 'PASS' | 'FAIL';
  resultCode: string;
  reason: string;
  reapplyBlockedUntil: Date | null;
}

/** Completes the application with the provider's verdict, only while it is still pending. */
export async function completePendingApplication(
  db: Knex,
  organizationId: string,
  id: string,
  verdict: Verdict,
  now: Date,
): Promise<void> {
  await db('kyc_applications')
    .where({ organization_id: organizationId, id, status: KycStatus.ID_VERIFICATION_PENDING })
    .update({
      status: verdict.status,
      outcome: verdict.outcome,
      result_code: verdict.resultCode,
      reason: verdict.reason,
      needs_review: false,
      verification_completed_at: now,
      reapply_blocked_until: verdict.reapplyBlockedUntil,
      updated_at: now,
    });
}

/** Rejects a still-pending application whose submission cannot go on (outcome ERROR). */
export async function failPendingApplication(
  db: Knex,
  organizationId: string,
  id: string,
  reason: string,
  now: Date,
): Promise<void> {
  await db('kyc_applications')
    .where({ organization_id: organizationId, id, status: KycStatus.ID_VERIFICATION_PENDING })
    .update({ status: KycStatus.REJECTED, outcome: 'ERROR', reason, verification_completed_at: now, updated_at: now });
}

import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import { KycStatus } from '../../domain/kyc/status';
import { isUuid } from '../../domain/identifiers';
import { isUniqueViolation } from '../knex';

/** KYC queries; each takes the caller's organization first, so no query can cross tenants. */
export interface KycApplicationRow {
  id: string;
  organization_id: string;
  user_id: string;
  status: KycStatus;
  channel: string | null;
  negotiated_api_version: ProviderApiVersion | null;
  /** The X-Provider-Api-Versions values GET verification was last sent, canonical (null: no GET, or one before they were kept). */
  sent_api_versions: string | null;
  api_version: ProviderApiVersion | null;
  job_id: string | null;
  provider_job_id: string | null;
  outcome: string | null;
  result_code: string | null;
  reason: string | null;
  needs_review: boolean;
  resubmission_count: number;
  reapply_blocked_until: Date | null;
  submitted_at: Date | null;
  submission_attempted_at: Date | null;
  verification_completed_at: Date | null;
  provider_checked_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const ACTIVE = [KycStatus.DRAFT, KycStatus.ID_VERIFICATION_PENDING];

export function findApplication(db: Knex, organizationId: string, id: string): Promise<KycApplicationRow | undefined> {
  return db('kyc_applications').where({ organization_id: organizationId, id }).first();
}

/** What GET status needs, in one indexed read: the hot path of polling clients. */
export type KycStatusRow = Pick<
  KycApplicationRow,
  | 'id'
  | 'user_id'
  | 'status'
  | 'needs_review'
  | 'resubmission_count'
  | 'reapply_blocked_until'
  | 'submitted_at'
  | 'provider_checked_at'
>;

/** The user's DRAFT application, or undefined when one is already active (one active per user). */
export async function createApplication(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<KycApplicationRow | undefined> {
  try {
    const [row] = await db('kyc_applications')
      .insert({ id: randomUUID(), organization_id: organizationId, user_id: userId, status: KycStatus.DRAFT })
      .returning('*');
    return row;
  } catch (error) {
    if (isUniqueViolation(error)) return undefined; // kyc_applications_one_active
    throw error;
  }
}

export function findActiveApplication(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<KycApplicationRow | undefined> {
  return db('kyc_applications')
    .where({ organization_id: organizationId, user_id: userId })
    .whereIn('status', ACTIVE)
    .first();
}

/**
 * Remembers what the requirements were read with: the negotiated version and the header's values
 * as sent (`sentProviderApiVersions`); the status is left as it is.
 */
export async function recordRequirementsRead(
  db: Knex,
  organizationId: string,
  id: string,
  read: { version: ProviderApiVersion; sentVersions: string },
): Promise<void> {
  await db('kyc_applications')
    .where({ organization_id: organizationId, id })
    .update({ negotiated_api_version: read.version, sent_api_versions: read.sentVersions, updated_at: db.fn.now() });
}

/**
 * The application a provider callback names by our job id. The one lookup without an
 * organization: a callback carries none, and job ids are uuids we minted, unique across
 * organizations (a unique index). Only a well-formed uuid reaches the query.
 */
export function findApplicationByJobId(
  db: Knex,
  jobId: string,
): Promise<Pick<KycApplicationRow, 'id' | 'organization_id'> | undefined> {
  if (!isUuid(jobId)) return Promise.resolve(undefined);
  return db('kyc_applications').where({ job_id: jobId }).first('id', 'organization_id');
}

/** The user's most recent application, of any status. */
export function findLatestApplication(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<KycApplicationRow | undefined> {
  return db('kyc_applications')
    .where({ organization_id: organizationId, user_id: userId })
    .orderBy('created_at', 'desc')
    .first();
}

import type { Knex } from 'knex';
import type { Clock } from '../../domain/clock';
import type { SweepResult } from '../../domain/kyc/expiry-sweep';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import { KycStatus } from '../../domain/kyc/status';

/** The expiry sweep's queries: each organization's lease and due-window, and its batches. */

/** Every organization's id, in order: platform-wide, the sweep fans out over all of them. */
export function listOrganizationIds(db: Knex): Promise<string[]> {
  return db('organizations').orderBy('id').pluck('id');
}

export type SweepLease = { taken: true; now: Date } | { taken: false; lastResult: SweepResult | null };

/**
 * Takes the organization's lease when its window is due and no one holds it, for `leaseMs`, and
 * moves the window on by `intervalMs`. The lease row stays locked (FOR UPDATE) until the
 * decision is written, and the time is read under that lock.
 */
export function takeSweepLease(
  db: Knex,
  organizationId: string,
  clock: Clock,
  terms: { leaseMs: number; intervalMs: number },
): Promise<SweepLease> {
  return db.transaction(async (trx) => {
    await trx('kyc_sweep_leases').insert({ organization_id: organizationId }).onConflict('organization_id').ignore();
    const lease = await trx('kyc_sweep_leases').where({ organization_id: organizationId }).forUpdate().first();
    const now = clock.now();
    const leased = lease.leased_until && lease.leased_until > now;
    const due = !lease.next_due_at || lease.next_due_at <= now;
    if (leased || !due) return { taken: false, lastResult: lease.last_result ?? null };
    await trx('kyc_sweep_leases')
      .where({ organization_id: organizationId })
      .update({
        leased_until: new Date(now.getTime() + terms.leaseMs),
        next_due_at: new Date(now.getTime() + terms.intervalMs),
        last_started_at: now,
      });
    return { taken: true, now };
  });
}

/** Releases the lease and keeps the sweep's result (answered within the window). */
export async function releaseSweepLease(db: Knex, organizationId: string, result: SweepResult): Promise<void> {
  await db('kyc_sweep_leases')
    .where({ organization_id: organizationId })
    .update({ leased_until: null, last_finished_at: result.finished_at, last_result: JSON.stringify(result) });
}

/** A pending application the sweep asks the provider about. */
export interface SweepCandidate {
  id: string;
  user_id: string;
  /** Set by every submission, so always there on a pending application. */
  job_id: string;
  api_version: ProviderApiVersion | null;
  provider_job_id: string | null;
}

/** One batch of pending applications submitted before `cutoff`, in id order after `afterId`. */
export function findStalePending(
  db: Knex,
  organizationId: string,
  cutoff: string,
  afterId: string | null,
  limit: number,
): Promise<SweepCandidate[]> {
  const query = db('kyc_applications')
    .where({ organization_id: organizationId, status: KycStatus.ID_VERIFICATION_PENDING })
    .where('submitted_at', '<', cutoff)
    .orderBy('id')
    .limit(limit)
    .select<SweepCandidate[]>('id', 'user_id', 'job_id', 'api_version', 'provider_job_id');
  if (afterId) query.where('id', '>', afterId);
  return query;
}

// The batch writes: one statement for many applications, changing only those still pending.
const stillPending = (db: Knex, organizationId: string, ids: string[]) =>
  db('kyc_applications')
    .where({ organization_id: organizationId, status: KycStatus.ID_VERIFICATION_PENDING })
    .whereIn('id', ids);

/** Notes that the provider was asked about these (still running there). */
export async function noteProviderChecked(db: Knex, organizationId: string, ids: string[], now: Date): Promise<void> {
  await stillPending(db, organizationId, ids).update({ provider_checked_at: now });
}

/** EXPIRED, for jobs the provider no longer knows; how many changed. */
export async function expireUnknownJobs(db: Knex, organizationId: string, ids: string[], now: Date): Promise<number> {
  const expired: unknown[] = await stillPending(db, organizationId, ids).update(
    {
      status: KycStatus.EXPIRED,
      reason: 'The provider no longer knows the job',
      verification_completed_at: now,
      updated_at: now,
    },
    ['id'],
  );
  return expired.length;
}

/** Completes these with one final verdict of the provider; how many changed. */
export async function completeWithVerdict(
  db: Knex,
  organizationId: string,
  ids: string[],
  verdict: { approved: boolean; resultCode: string; resultText: string },
  now: Date,
): Promise<number> {
  const completed: unknown[] = await stillPending(db, organizationId, ids).update(
    {
      status: verdict.approved ? KycStatus.APPROVED : KycStatus.REJECTED,
      outcome: verdict.approved ? 'PASS' : 'FAIL',
      result_code: verdict.resultCode,
      reason: verdict.resultText,
      needs_review: false,
      verification_completed_at: now,
      updated_at: now,
    },
    ['id'],
  );
  return completed.length;
}

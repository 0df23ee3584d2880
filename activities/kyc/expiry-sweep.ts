import { Context } from '@temporalio/activity';
import { categoryOf, ResultCategory } from '../../domain/kyc/result-codes';
import { KycStatus } from '../../domain/kyc/status';
import { forEachConcurrently } from '../../domain/concurrency';
import { NO_COUNTS, type SweepCounts, type SweepResult, type SweepStart } from '../../workflows/kyc/messages';
import type { ActivityDeps } from '../index';

/**
 * The expiry sweep's I/O: the organization's lease and due-window, and the batches. The
 * provider is always asked first: final there → the application completes; unknown there →
 * EXPIRED; still running → left pending; a provider error → counted as failed. The verification
 * run of a settled application ends at its next wake, when its own lookup finds the application
 * no longer pending (no signal per application: at sweep scale those cost more than the lookups).
 */
export function createKycSweepActivities(deps: ActivityDeps) {
  const { db, config, clock, providers } = deps;

  return {
    async listOrganizations(): Promise<string[]> {
      return db('organizations').orderBy('id').pluck('id');
    },

    /** Takes the organization's lease when its window is due; otherwise answers its last result. */
    async beginSweep(organizationId: string): Promise<SweepStart> {
      return db.transaction(async (trx) => {
        await trx('kyc_sweep_leases').insert({ organization_id: organizationId }).onConflict('organization_id').ignore();
        const lease = await trx('kyc_sweep_leases').where({ organization_id: organizationId }).forUpdate().first();
        const now = clock.now();
        const leased = lease.leased_until && lease.leased_until > now;
        const due = !lease.next_due_at || lease.next_due_at <= now;
        if (leased || !due) return { due: false, last: lease.last_result ?? null };
        await trx('kyc_sweep_leases')
          .where({ organization_id: organizationId })
          .update({
            // Long enough for a large organization; released at the end, or left to expire after a crash.
            leased_until: new Date(now.getTime() + Math.max(config.KYC_EXPIRY_SWEEP_INTERVAL, 60_000)),
            next_due_at: new Date(now.getTime() + config.KYC_EXPIRY_SWEEP_INTERVAL),
            last_started_at: now,
          });
        return { due: true, startedAt: now.toISOString(), cutoff: new Date(now.getTime() - config.KYC_SUBMISSION_WINDOW).toISOString() };
      });
    },

    /** One batch of pending applications past the submission window, in id order after `afterId`. */
    async sweepBatch(input: { organizationId: string; cutoff: string; afterId: string | null; limit: number }): Promise<{ counts: SweepCounts; lastId: string | null }> {
      const query = db('kyc_applications')
        .where({ organization_id: input.organizationId, status: KycStatus.ID_VERIFICATION_PENDING })
        .where('submitted_at', '<', input.cutoff)
        .orderBy('id')
        .limit(input.limit)
        .select('id', 'user_id', 'job_id', 'api_version', 'provider_job_id');
      if (input.afterId) query.where('id', '>', input.afterId);
      const applications = await query;
      const counts = { ...NO_COUNTS, scanned: applications.length };
      const stillPending: string[] = [];
      const unknown: string[] = [];
      /** Final verdicts, grouped by what they write (few distinct results per batch). */
      const verdicts = new Map<string, { approved: boolean; resultCode: string; resultText: string; ids: string[] }>();
      let lastHeartbeat = 0;

      // Up to KYC_SWEEP_CONCURRENCY provider lookups in flight: the sweep is bound by the
      // provider's latency. The writes wait for the end of the batch and go together, a
      // statement per kind of outcome rather than one per application.
      await forEachConcurrently(applications, config.KYC_SWEEP_CONCURRENCY, async (application) => {
        if (Date.now() - lastHeartbeat > 1_000) {
          lastHeartbeat = Date.now();
          Context.current().heartbeat(application.id);
        }
        let status;
        try {
          status = await providers.kyc.jobStatus({
            apiVersion: application.api_version ?? 'v2',
            jobId: application.job_id,
            userId: application.user_id,
            providerJobId: application.provider_job_id ?? undefined,
          });
        } catch {
          counts.failed += 1;
          return;
        }
        if (status.state === 'processing' || (status.state === 'final' && (categoryOf(status.resultCode) === ResultCategory.PROVISIONAL || !status.isFinal))) {
          counts.still_pending += 1;
          stillPending.push(application.id);
        } else if (status.state === 'not_found') {
          unknown.push(application.id);
        } else {
          const approved = categoryOf(status.resultCode) === ResultCategory.APPROVED;
          const key = `${approved}\u0000${status.resultCode}\u0000${status.resultText}`;
          const group = verdicts.get(key) ?? { approved, resultCode: status.resultCode, resultText: status.resultText, ids: [] };
          group.ids.push(application.id);
          verdicts.set(key, group);
        }
      });

      const now = clock.now();
      const stillPendingHere = () => db('kyc_applications').where({ organization_id: input.organizationId, status: KycStatus.ID_VERIFICATION_PENDING });
      if (stillPending.length > 0) await stillPendingHere().whereIn('id', stillPending).update({ provider_checked_at: now });
      // Only rows still pending change (a callback may have completed one meanwhile), and only those count.
      if (unknown.length > 0) {
        const expired: unknown[] = await stillPendingHere()
          .whereIn('id', unknown)
          .update({ status: KycStatus.EXPIRED, reason: 'The provider no longer knows the job', verification_completed_at: now, updated_at: now }, ['id']);
        counts.expired += expired.length;
      }
      for (const group of verdicts.values()) {
        const completed: unknown[] = await stillPendingHere()
          .whereIn('id', group.ids)
          .update(
            {
              status: group.approved ? KycStatus.APPROVED : KycStatus.REJECTED,
              outcome: group.approved ? 'PASS' : 'FAIL',
              result_code: group.resultCode,
              reason: group.resultText,
              needs_review: false,
              verification_completed_at: now,
              updated_at: now,
            },
            ['id'],
          );
        counts.completed += completed.length;
      }
      return { counts, lastId: applications.at(-1)?.id ?? null };
    },

    async finishSweep(result: SweepResult): Promise<void> {
      await db('kyc_sweep_leases')
        .where({ organization_id: result.organization_id })
        .update({ leased_until: null, last_finished_at: result.finished_at, last_result: JSON.stringify(result) });
    },
  };
}

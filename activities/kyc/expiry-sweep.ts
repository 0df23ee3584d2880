import { Context } from '@temporalio/activity';
import { isApplicantsJob } from '../../domain/kyc/jobs';
import { ResultCategory } from '../../domain/kyc/result-codes';
import { forEachConcurrently } from '../../domain/concurrency';
import {
  completeWithVerdict,
  expireUnknownJobs,
  findStalePending,
  listOrganizationIds,
  noteProviderChecked,
  releaseSweepLease,
  takeSweepLease,
} from '../../db/kyc/expiry-sweep';
import { NO_COUNTS, type SweepCounts, type SweepResult } from '../../domain/kyc/expiry-sweep';
import type { SweepStart } from '../../workflows/kyc/messages';
import type { Needs } from '../deps';

/**
 * The expiry sweep's I/O: the organization's lease and due-window, and the batches. The
 * provider is always asked first: final there → the application completes; unknown there →
 * EXPIRED; still running → left pending; a provider error → counted as failed. The verification
 * run of a settled application ends at its next wake, when its own lookup finds the application
 * no longer pending (no signal per application: at sweep scale those cost more than the lookups).
 */
export function createExpirySweepActivities(
  deps: Needs<
    'db' | 'clock' | 'providers',
    'KYC_EXPIRY_SWEEP_INTERVAL' | 'KYC_SUBMISSION_WINDOW' | 'KYC_SWEEP_CONCURRENCY'
  >,
) {
  const { db, config, clock, providers } = deps;

  return {
    /** Platform-wide: every organization's id, for the fan-out. */
    async listOrganizations(): Promise<string[]> {
      return listOrganizationIds(db);
    },

    /** Takes the organization's lease when its window is due; otherwise answers its last result. */
    async beginSweep(organizationId: string): Promise<SweepStart> {
      const lease = await takeSweepLease(db, organizationId, clock, {
        // Long enough for a large organization; released at the end, or left to expire after a crash.
        leaseMs: Math.max(config.KYC_EXPIRY_SWEEP_INTERVAL, 60_000),
        intervalMs: config.KYC_EXPIRY_SWEEP_INTERVAL,
      });
      if (!lease.taken) return { due: false, last: lease.lastResult };
      const { now } = lease;
      return {
        due: true,
        startedAt: now.toISOString(),
        cutoff: new Date(now.getTime() - config.KYC_SUBMISSION_WINDOW).toISOString(),
      };
    },

    /** One batch of pending applications past the submission window, in id order after `afterId`. */
    async sweepBatch(input: {
      organizationId: string;
      cutoff: string;
      afterId: string | null;
      limit: number;
    }): Promise<{ counts: SweepCounts; lastId: string | null }> {
      const applications = await findStalePending(db, input.organizationId, input.cutoff, input.afterId, input.limit);
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
        // A job that is not the applicant's (a reported id of another user's job) settles nothing:
        // as far as this application goes, the provider does not know its job.
        if (
          status.state === 'final' &&
          !isApplicantsJob(status, application, application.provider_job_id ?? undefined)
        ) {
          unknown.push(application.id);
        } else if (
          status.state === 'processing' ||
          (status.state === 'final' && (status.category === ResultCategory.PROVISIONAL || !status.isFinal))
        ) {
          counts.still_pending += 1;
          stillPending.push(application.id);
        } else if (status.state === 'not_found') {
          unknown.push(application.id);
        } else {
          const approved = status.category === ResultCategory.APPROVED;
          const key = `${approved}\u0000${status.resultCode}\u0000${status.resultText}`;
          const group = verdicts.get(key) ?? {
            approved,
            resultCode: status.resultCode,
            resultText: status.resultText,
            ids: [],
          };
          group.ids.push(application.id);
          verdicts.set(key, group);
        }
      });

      const now = clock.now();
      // Each write changes, and counts, only rows still pending (a callback may have completed one meanwhile).
      if (stillPending.length > 0) await noteProviderChecked(db, input.organizationId, stillPending, now);
      if (unknown.length > 0) {
        const expired = await expireUnknownJobs(db, input.organizationId, unknown, now);
        counts.expired += expired;
      }
      for (const group of verdicts.values()) {
        const completed = await completeWithVerdict(db, input.organizationId, group.ids, group, now);
        counts.completed += completed;
      }
      return { counts, lastId: applications.at(-1)?.id ?? null };
    },

    async finishSweep(result: SweepResult): Promise<void> {
      await releaseSweepLease(db, result.organization_id, result);
    },
  };
}

import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  continueAsNew,
  ParentClosePolicy,
  patched,
  proxyActivities,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { KycActivities } from '../../activities';
import { workflowIds } from '../ids';
import { NO_COUNTS, type SweepCounts, type SweepResult } from '../../domain/kyc/expiry-sweep';
import type { SweepProgress } from './messages';

const activities = proxyActivities<KycActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumInterval: '1 minute' },
});

const BATCHES_BEFORE_CONTINUE_AS_NEW = 20;
/** Changes to running workflows' commands, each kept until no history without it can be replayed. */
const PATCHES = { concurrentSweepStarts: 'kyc-sweep-all-concurrent-starts' } as const;
const add = (a: SweepCounts, b: SweepCounts): SweepCounts => ({
  scanned: a.scanned + b.scanned,
  expired: a.expired + b.expired,
  completed: a.completed + b.completed,
  still_pending: a.still_pending + b.still_pending,
  failed: a.failed + b.failed,
});

/**
 * The expiry sweep of one organization (`kyc-expiry-sweep/<organization id>`), whether the
 * schedule or an operator started it. Runs only when the organization's window is due (else it
 * answers the last result), in batches, continuing as new for large organizations.
 */
export async function kycExpirySweep(
  input: { organizationId: string; batchSize: number },
  progress?: SweepProgress,
): Promise<SweepResult> {
  if (!progress) {
    const start = await activities.beginSweep(input.organizationId);
    if (!start.due) {
      const now = new Date().toISOString(); // workflow time: deterministic on replay
      return (
        start.last ?? {
          job: 'KYC_STALE_SESSION_EXPIRY',
          organization_id: input.organizationId,
          started_at: now,
          finished_at: now,
          result: NO_COUNTS,
        }
      );
    }
    progress = { startedAt: start.startedAt, cutoff: start.cutoff, afterId: null, counts: NO_COUNTS };
  }
  for (let batch = 0; batch < BATCHES_BEFORE_CONTINUE_AS_NEW; batch++) {
    const current: SweepProgress = progress;
    const { counts, lastId }: { counts: SweepCounts; lastId: string | null } = await activities.sweepBatch({
      organizationId: input.organizationId,
      cutoff: current.cutoff,
      afterId: current.afterId,
      limit: input.batchSize,
    });
    progress = { ...current, afterId: lastId, counts: add(current.counts, counts) };
    if (lastId === null || counts.scanned < input.batchSize) {
      const result: SweepResult = {
        job: 'KYC_STALE_SESSION_EXPIRY',
        organization_id: input.organizationId,
        started_at: progress.startedAt,
        finished_at: new Date().toISOString(),
        result: progress.counts,
      };
      await activities.finishSweep(result);
      return result;
    }
  }
  return continueAsNew<typeof kycExpirySweep>(input, progress);
}

/**
 * What the schedule runs: one sweep per organization, each its own workflow. An organization
 * whose sweep is already running (a manual one) is left to it; none waits for another.
 */
export async function kycExpirySweepAll(input: { batchSize: number }): Promise<{ started: number }> {
  const organizations = await activities.listOrganizations();
  const start = (organizationId: string) =>
    startChild(kycExpirySweep, {
      workflowId: workflowIds.kycExpirySweep(organizationId),
      args: [{ organizationId, batchSize: input.batchSize }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    }).then(
      () => 1,
      (error) => {
        // A sweep of this organization is already running (a manual one): it is left to finish.
        if (error instanceof WorkflowExecutionAlreadyStartedError) return 0;
        throw error;
      },
    );
  // All starts in one workflow task: one at a time cost a round trip per organization.
  if (patched(PATCHES.concurrentSweepStarts)) {
    const started = await Promise.all(organizations.map(start));
    return { started: started.reduce((a, b) => a + b, 0) };
  }
  let started = 0;
  for (const organizationId of organizations) started += await start(organizationId);
  return { started };
}

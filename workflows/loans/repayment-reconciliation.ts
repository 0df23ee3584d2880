import { proxyActivities } from '@temporalio/workflow';
import type { LoanActivities } from '../../activities';
import type { RepaymentReconciliationInput } from './messages';

const activities = proxyActivities<LoanActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '1 minute' },
});

/** Pushes per run: a long backlog is taken over several runs of the schedule. */
const BATCH = 200;

/**
 * One run of the `repayment-reconciliation` schedule: a push posted on a credit account and never
 * allocated (a stk-push run in flight before repayments existed, or anything lost) is handed to
 * its loan's run again, as the push's own run does (or allocated at once when no loan is open).
 * Handing over twice changes nothing: the allocation is unique per push.
 */
export async function repaymentReconciliation(input: RepaymentReconciliationInput): Promise<{ reconciled: number }> {
  const pending = await activities.unallocatedRepayments({ ...input, limit: BATCH });
  for (const push of pending) await activities.handOverRepayment(push);
  return { reconciled: pending.length };
}

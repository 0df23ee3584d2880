import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
import type { CurrentAccountActivities } from '../../activities';
import { type BankDecision, SelfServiceFailure } from './messages';
import type { BankPolling } from './messages';

/**
 * What the self-service workflows share: their steps, and the bank's decision awaited.
 *
 * Projection writes are local activities (short database writes, safe to rerun). Codes, links and
 * bank calls are activities with retries: a provider's hiccup costs a retry, not the run.
 */
export const record = proxyLocalActivities<CurrentAccountActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '30 seconds' },
});

/**
 * Outcomes that messages decide (a code accepted or locked, a link used, the run expired or
 * rejected) are written by activities: an activity starts only once the workflow task that
 * decided it is saved. A local activity runs inside its task; when that task is lost with its
 * worker, the task is done again, its Updates perhaps in another order, and a write from the lost
 * task (REJECTED by a lock the redone task never reached) stayed while the run ended otherwise:
 * the handlers chaos suite saw an activation COMPLETED at the bank and REJECTED on its row.
 */
const committed = proxyActivities<CurrentAccountActivities>({
  // One row's write: a worker that dies holding it costs this long before another takes it.
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
const OUTCOMES_COMMITTED = 'self-service-outcomes-committed';
/** Where a message-decided outcome is written: an activity (patched), before the patch a local one. */
export const outcome = () => (patched(OUTCOMES_COMMITTED) ? committed : record);

/** Sending a code or a link: a few tries (a user waits for it); a refused destination is final (NOT_SENT). */
export const send = proxyActivities<CurrentAccountActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/** The bank's steps, retried until the run's bank deadline. */
export const bankSteps = (polling: BankPolling) =>
  proxyActivities<CurrentAccountActivities>({
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: polling.deadlineMs,
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  });

/**
 * A sending step that failed, as an Update's failure the API answers: SEND_LIMIT (over the hourly
 * limits, with when they free up) or NOT_SENT (the provider refused or stayed down).
 */
export function sendRefusal(error: unknown): ApplicationFailure {
  const type = failureType(error);
  const details =
    error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? error.cause.details : undefined;
  return type === SelfServiceFailure.SEND_LIMIT
    ? ApplicationFailure.create({
        type,
        message: 'Too many codes sent in the last hour',
        nonRetryable: true,
        details: details ?? undefined,
      })
    : ApplicationFailure.create({
        type: SelfServiceFailure.NOT_SENT,
        message: 'The code could not be sent',
        nonRetryable: true,
      });
}

/** Why a step that failed for good failed: its failure type, or UNAVAILABLE when it ran out of retries. */
export function failureType(error: unknown): string {
  if (!(error instanceof ActivityFailure)) throw error;
  return error.cause instanceof ApplicationFailure && error.cause.type ? error.cause.type : 'UNAVAILABLE';
}

/**
 * The bank's decision on a submission, asking about a PENDING one every interval until the
 * deadline: DONE, REFUSED, or NO_DECISION; UNAVAILABLE when the bank could not be reached in time.
 */
export async function bankDecision(
  polling: BankPolling,
  submit: () => Promise<BankDecision>,
  read: (pending: BankDecision) => Promise<BankDecision>,
): Promise<BankDecision | { status: 'NO_DECISION' | 'UNAVAILABLE' }> {
  const deadline = Date.now() + polling.deadlineMs;
  try {
    let decision = await submit();
    while (decision.status === 'PENDING') {
      if (Date.now() + polling.intervalMs > deadline) return { status: 'NO_DECISION' };
      await sleep(polling.intervalMs);
      decision = await read(decision);
    }
    return decision;
  } catch (error) {
    failureType(error);
    return { status: 'UNAVAILABLE' };
  }
}

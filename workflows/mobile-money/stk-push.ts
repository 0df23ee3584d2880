import { condition, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { LoanActivities, MobileMoneyActivities } from '../../activities';
import {
  type MoneyMovementResult,
  stkCallbackSignal,
  type StkPushInput,
  type StkResult,
  stkResultSignal,
} from './messages';
import { PushCallbackTriage } from './stk-push-callbacks';

/**
 * Local activities: each step is a short database write or one provider call, so running it in
 * the worker that runs the workflow saves a server round trip per step (a push then costs what
 * a bare start, signal and completion cost). Every step is safe to run again, which a local
 * activity needs: it reruns when the worker dies before the workflow task that ran it is saved.
 */
/** Changes made while runs may be in flight; each branch keeps older histories replaying. */
const PATCHES = {
  settleInOneStep: 'stk-push-settle-in-one-step',
  /** Only a complete and consistent paid callback settles a push; every other callback makes the run ask the provider. */
  callbacksAreTriggers: 'stk-push-callbacks-are-triggers',
  /** A run that fell behind its deadline (its worker stalled or was down) asks once more before giving up. */
  askBeforeGivingUp: 'stk-push-ask-before-giving-up',
} as const;

const money = proxyLocalActivities<MobileMoneyActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '30 seconds' },
});
const loans = proxyLocalActivities<LoanActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '30 seconds' },
});

/**
 * A push-prompt collection (`stk-push/<transaction id>`): send the prompt once, wait for the
 * callback, ask the provider when none comes in time, then post the collection to the ledger
 * or record why it failed. The prompt is never sent again after an indeterminate answer: the
 * callback (matched by the token in its URL) or the status query settles it instead.
 *
 * A callback is a trigger, never proof: only a paid callback complete and consistent with the
 * push (amount, phone and receipt checked by the callback route, the request ids by the route or
 * by this run) settles it; any other arrives as a trigger and the run asks the status query at
 * once. What callbacks may do is PushCallbackTriage's (stk-push-callbacks.ts).
 */
export async function stkPush(input: StkPushInput): Promise<MoneyMovementResult> {
  const callbacksAreTriggers = patched(PATCHES.callbacksAreTriggers);
  const triage = new PushCallbackTriage();
  // Runs started before callbacks became triggers: the first result naming their push wins.
  let legacy: { result?: StkResult; checkoutRequestId?: string } = {};
  setHandler(stkResultSignal, (incoming) => {
    if (callbacksAreTriggers) triage.onResult(incoming);
    else if (!legacy.result && (!legacy.checkoutRequestId || incoming.checkoutRequestId === legacy.checkoutRequestId))
      legacy.result = incoming;
  });
  if (callbacksAreTriggers) setHandler(stkCallbackSignal, (incoming) => triage.onTrigger(incoming));

  const push = await money.sendStkPush(input.transactionId);
  if (push.state === 'rejected') {
    await money.failTransaction(input.transactionId, { reason: 'PUSH_REJECTED', resultCode: push.errorCode });
    return { status: 'FAILED', failureReason: 'PUSH_REJECTED' };
  }

  let result: StkResult | undefined;
  if (callbacksAreTriggers) {
    triage.onAnswer(
      push.state === 'accepted'
        ? { checkoutRequestId: push.checkoutRequestId, merchantRequestId: push.merchantRequestId }
        : undefined,
    );
    await awaitResult();
    result = triage.result;
  } else {
    if (push.state === 'accepted') {
      legacy = {
        checkoutRequestId: push.checkoutRequestId,
        result: legacy.result?.checkoutRequestId === push.checkoutRequestId ? legacy.result : undefined,
      };
    }
    await awaitResultBeforeTriggers();
    result = legacy.result;
  }

  if (!result) {
    await money.failTransaction(input.transactionId, { reason: 'NO_RESULT' });
    return { status: 'FAILED', failureReason: 'NO_RESULT' };
  }
  if (result.resultCode !== '0') {
    const failureReason = await money.failTransaction(input.transactionId, { resultCode: result.resultCode });
    return { status: 'FAILED', failureReason };
  }
  // Runs with callbacks as triggers all settle in one step: they skip that older patch's marker
  // (each marker also costs the server a search-attribute update).
  if (callbacksAreTriggers || patched(PATCHES.settleInOneStep)) {
    // Confirmed and posted in one step; the push id that proved the payment is recorded (unique).
    const settled = await money.settleCollection(input.transactionId, {
      receipt: result.receipt,
      checkoutRequestId: result.checkoutRequestId,
    });
    if (settled === 'UNPROVEN') return { status: 'FAILED', failureReason: 'NO_RESULT' };
  } else {
    await money.confirmTransaction(input.transactionId, {
      receipt: result.receipt,
      transactionDate: result.transactionDate,
      checkoutRequestId: result.checkoutRequestId,
    });
    await money.postCollection(input.transactionId);
  }
  // A repayment: allocated now, or by its loan's run when that run is behind (see handOverRepayment).
  if (input.repayment)
    await loans.handOverRepayment({ organizationId: input.organizationId!, transactionId: input.transactionId });
  return { status: 'POSTED' };

  /**
   * Until a result or the deadline: the status query is asked from the end of the callback wait
   * every interval, and at once when a callback asks for it, though not twice within an interval
   * (a flood of callbacks costs one query per interval). "Being processed" is pending.
   */
  async function awaitResult(): Promise<void> {
    const deadline = Date.now() + input.callbackWaitMs + input.queryDeadlineMs;
    let scheduledAsk = Date.now() + input.callbackWaitMs;
    let lastAsk = Number.NEGATIVE_INFINITY;
    while (!triage.result && Date.now() < deadline) {
      const urgent = triage.urgent;
      const askAt = urgent
        ? Math.min(scheduledAsk, Math.max(Date.now(), lastAsk + input.queryIntervalMs))
        : scheduledAsk;
      if (Date.now() < askAt) {
        await condition(
          () => triage.result !== undefined || (!urgent && triage.urgent),
          Math.min(askAt, deadline) - Date.now(),
        );
        continue;
      }
      lastAsk = Date.now();
      const scheduled = lastAsk >= scheduledAsk;
      if (scheduled) scheduledAsk = lastAsk + input.queryIntervalMs;
      await ask(scheduled);
    }
    // The loop asks every interval up to the deadline; a run whose tasks ran late (a stalled or
    // dead worker) may reach the deadline without a recent answer: it asks once more, so no push
    // is given up without the provider asked since its deadline neared.
    if (!triage.result && lastAsk < deadline - input.queryIntervalMs && patched(PATCHES.askBeforeGivingUp))
      await ask(true);
  }

  async function ask(scheduled: boolean): Promise<void> {
    for (const pending of triage.toAsk(scheduled)) {
      triage.onQueryAnswer(pending, await money.queryStkPush(pending.checkoutRequestId));
      if (triage.result) break;
    }
  }

  /** Runs started before callbacks became triggers: every checked callback was a result. */
  async function awaitResultBeforeTriggers(): Promise<void> {
    const checkoutRequestId = legacy.checkoutRequestId;
    if (!(await condition(() => legacy.result !== undefined, input.callbackWaitMs)) && checkoutRequestId) {
      // No callback in time: ask. "Being processed" is still pending, not a failure.
      const deadline = Date.now() + input.queryDeadlineMs;
      while (!legacy.result && Date.now() < deadline) {
        const answer = await money.queryStkPush(checkoutRequestId);
        if (answer.state === 'final' && !legacy.result) {
          legacy.result = {
            source: 'query',
            checkoutRequestId,
            resultCode: answer.resultCode,
            resultDesc: answer.resultDesc,
          };
          break;
        }
        await condition(
          () => legacy.result !== undefined,
          Math.min(input.queryIntervalMs, Math.max(deadline - Date.now(), 1)),
        );
      }
    } else if (!legacy.result) {
      // The push's fate is unknown and there is nothing to query: only its callback can settle it.
      await condition(() => legacy.result !== undefined, input.queryDeadlineMs);
    }
  }
}

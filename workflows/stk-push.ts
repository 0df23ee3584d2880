import { condition, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { type MoneyMovementResult, type StkPushInput, type StkResult, stkResultSignal } from './mobile-money-messages';

/**
 * Local activities: each step is a short database write or one provider call, so running it in
 * the worker that runs the workflow saves a server round trip per step (a push then costs what
 * a bare start, signal and completion cost). Every step is safe to run again, which a local
 * activity needs: it reruns when the worker dies before the workflow task that ran it is saved.
 */
/** Changes made while runs may be in flight; each branch keeps older histories replaying. */
const PATCHES = { settleInOneStep: 'stk-push-settle-in-one-step' } as const;

const money = proxyLocalActivities<Activities>({ startToCloseTimeout: '1 minute', retry: { maximumInterval: '30 seconds' } });

/**
 * A push-prompt collection (`stk-push/<transaction id>`): send the prompt once, wait for the
 * callback, ask the provider when none comes in time, then post the collection to the ledger
 * or record why it failed. The prompt is never sent again after an indeterminate answer: the
 * callback (matched by the token in its URL) or the status query settles it instead.
 */
export async function stkPush(input: StkPushInput): Promise<MoneyMovementResult> {
  let result: StkResult | undefined;
  let checkoutRequestId: string | undefined;
  // The first result for this push wins; duplicates and results for another push change nothing.
  setHandler(stkResultSignal, (incoming) => {
    if (result || (checkoutRequestId && incoming.checkoutRequestId !== checkoutRequestId)) return;
    result = incoming;
  });

  const push = await money.sendStkPush(input.transactionId);
  if (push.state === 'rejected') {
    await money.failTransaction(input.transactionId, { reason: 'PUSH_REJECTED', resultCode: push.errorCode });
    return { status: 'FAILED', failureReason: 'PUSH_REJECTED' };
  }
  if (push.state === 'accepted') {
    checkoutRequestId = push.checkoutRequestId;
    if (result && result.checkoutRequestId !== checkoutRequestId) result = undefined;
  }

  if (!(await condition(() => result !== undefined, input.callbackWaitMs)) && checkoutRequestId) {
    // No callback in time: ask. "Being processed" is still pending, not a failure.
    const deadline = Date.now() + input.queryDeadlineMs;
    while (!result && Date.now() < deadline) {
      const answer = await money.queryStkPush(checkoutRequestId);
      if (answer.state === 'final' && !result) {
        result = { source: 'query', checkoutRequestId, resultCode: answer.resultCode, resultDesc: answer.resultDesc };
        break;
      }
      await condition(() => result !== undefined, Math.min(input.queryIntervalMs, Math.max(deadline - Date.now(), 1)));
    }
  } else if (!result) {
    // The push's fate is unknown and there is nothing to query: only its callback can settle it.
    await condition(() => result !== undefined, input.queryDeadlineMs);
  }

  if (!result) {
    await money.failTransaction(input.transactionId, { reason: 'NO_RESULT' });
    return { status: 'FAILED', failureReason: 'NO_RESULT' };
  }
  if (result.resultCode !== '0') {
    const failureReason = await money.failTransaction(input.transactionId, { resultCode: result.resultCode });
    return { status: 'FAILED', failureReason };
  }
  if (patched(PATCHES.settleInOneStep)) {
    // Confirmed and posted in one step: one local activity, one workflow activation fewer.
    await money.settleCollection(input.transactionId, { receipt: result.receipt });
  } else {
    await money.confirmTransaction(input.transactionId, { receipt: result.receipt, transactionDate: result.transactionDate, checkoutRequestId: result.checkoutRequestId });
    await money.postCollection(input.transactionId);
  }
  return { status: 'POSTED' };
}

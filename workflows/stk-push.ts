import { condition, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { type MoneyMovementResult, type StkCallbackTrigger, stkCallbackSignal, type StkPushInput, type StkResult, stkResultSignal } from './mobile-money-messages';

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
} as const;

const money = proxyLocalActivities<Activities>({ startToCloseTimeout: '1 minute', retry: { maximumInterval: '30 seconds' } });

/**
 * A push-prompt collection (`stk-push/<transaction id>`): send the prompt once, wait for the
 * callback, ask the provider when none comes in time, then post the collection to the ledger
 * or record why it failed. The prompt is never sent again after an indeterminate answer: the
 * callback (matched by the token in its URL) or the status query settles it instead.
 *
 * A callback is a trigger, never proof: only a paid callback complete and consistent with the
 * push (amount, phone, receipt checked by the callback route; the request ids by the route, or
 * by this run when the callback came before the push's answer) settles it; any other (a
 * refusal, an incomplete or inconsistent one) arrives as a trigger, and the run asks the status
 * query at once.
 */
export async function stkPush(input: StkPushInput): Promise<MoneyMovementResult> {
  const callbacksAreTriggers = patched(PATCHES.callbacksAreTriggers);
  let result: StkResult | undefined;
  let trigger: StkCallbackTrigger | undefined;
  /** Known once the push request was answered; never, when its answer was lost. */
  let ids: { checkoutRequestId: string; merchantRequestId?: string } | undefined;
  let pushAnswered = false;
  /** Ours by the ids the provider answered the push with (a result also by its MerchantRequestID). */
  const ours = (incoming: { checkoutRequestId: string; merchantRequestId?: string }) =>
    !ids || (incoming.checkoutRequestId === ids.checkoutRequestId && (!callbacksAreTriggers || !incoming.merchantRequestId || !ids.merchantRequestId || incoming.merchantRequestId === ids.merchantRequestId));
  /**
   * A callback result whose ids this run cannot check (the push's answer was lost) is confirmed
   * by the status query like any other trigger: its receipt is kept if the query says paid.
   */
  const unverifiable = (incoming: StkResult) => callbacksAreTriggers && pushAnswered && !ids && incoming.source === 'callback';
  // The first result for this push wins; duplicates and results for another push change nothing.
  setHandler(stkResultSignal, (incoming) => {
    if (result || !ours(incoming)) return;
    if (unverifiable(incoming)) trigger = { checkoutRequestId: incoming.checkoutRequestId, receipt: incoming.receipt };
    else result = incoming;
  });
  setHandler(stkCallbackSignal, (incoming) => {
    if (!result && ours(incoming)) trigger = incoming;
  });

  const push = await money.sendStkPush(input.transactionId);
  pushAnswered = true;
  if (push.state === 'rejected') {
    await money.failTransaction(input.transactionId, { reason: 'PUSH_REJECTED', resultCode: push.errorCode });
    return { status: 'FAILED', failureReason: 'PUSH_REJECTED' };
  }
  if (push.state === 'accepted') {
    ids = { checkoutRequestId: push.checkoutRequestId, merchantRequestId: push.merchantRequestId };
    if (result && !ours(result)) result = undefined;
    if (trigger && !ours(trigger)) trigger = undefined;
  } else if (result && unverifiable(result)) {
    trigger = { checkoutRequestId: result.checkoutRequestId, receipt: result.receipt };
    result = undefined;
  }
  const checkoutRequestId = ids?.checkoutRequestId;

  if (callbacksAreTriggers) await awaitResult();
  else await awaitResultBeforeTriggers();

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
    // Confirmed and posted in one step: one local activity, one workflow activation fewer.
    await money.settleCollection(input.transactionId, { receipt: result.receipt });
  } else {
    await money.confirmTransaction(input.transactionId, { receipt: result.receipt, transactionDate: result.transactionDate, checkoutRequestId: result.checkoutRequestId });
    await money.postCollection(input.transactionId);
  }
  return { status: 'POSTED' };

  /**
   * Until a result or the deadline: the status query is asked from the end of the callback wait
   * every interval, and at once when a callback triggers it, though not twice within an
   * interval (a flood of callbacks costs one query per interval). "Being processed" is pending.
   */
  async function awaitResult(): Promise<void> {
    const deadline = Date.now() + input.callbackWaitMs + input.queryDeadlineMs;
    // A push whose answer was lost has no id to ask about until a callback names one.
    let scheduledAsk = checkoutRequestId ? Date.now() + input.callbackWaitMs : deadline;
    let lastAsk = Number.NEGATIVE_INFINITY;
    while (!result && Date.now() < deadline) {
      const askAt = trigger ? Math.min(scheduledAsk, Math.max(Date.now(), lastAsk + input.queryIntervalMs)) : scheduledAsk;
      if (Date.now() < askAt) {
        const waitingForTrigger = trigger === undefined;
        await condition(() => result !== undefined || (waitingForTrigger && trigger !== undefined), Math.min(askAt, deadline) - Date.now());
        continue;
      }
      const asked = trigger;
      trigger = undefined;
      lastAsk = Date.now();
      if (checkoutRequestId && lastAsk >= scheduledAsk) scheduledAsk = lastAsk + input.queryIntervalMs;
      const id = checkoutRequestId ?? asked?.checkoutRequestId;
      if (!id) continue;
      const answer = await money.queryStkPush(id);
      if (answer.state === 'final' && !result) {
        // A receipt is kept only from a callback whose amount, phone and receipt were right.
        result = { source: 'query', checkoutRequestId: id, resultCode: answer.resultCode, resultDesc: answer.resultDesc, receipt: answer.resultCode === '0' ? asked?.receipt : undefined };
      }
    }
  }

  /** Runs started before callbacks became triggers: every checked callback was a result. */
  async function awaitResultBeforeTriggers(): Promise<void> {
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
  }
}

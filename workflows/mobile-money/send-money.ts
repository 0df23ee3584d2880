import { condition, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { MobileMoneyActivities } from '../../activities';
import {
  type MoneyMovementResult,
  sendMoneyEarlyResultSignal,
  type SendMoneyInput,
  type SendMoneyResult,
  sendMoneyResultSignal,
  sendMoneyStatusSignal,
} from './messages';

/**
 * Local activities: each step is a short database write or one provider call, so running it in
 * the worker that runs the workflow saves a server round trip per step (a push then costs what
 * a bare start, signal and completion cost). Every step is safe to run again, which a local
 * activity needs: it reruns when the worker dies before the workflow task that ran it is saved.
 */
/** Changes made while runs may be in flight; each branch keeps older histories replaying. */
const PATCHES = {
  /** A queue timeout says the payout's fate is unknown: noted, never applied (the result or the wait decides). */
  queueTimeoutIsNoResult: 'send-money-queue-timeout-is-not-a-result',
  /** Without a result the provider's Transaction Status is asked; a lost answer is confirmed by it. */
  statusQuery: 'send-money-status-query',
} as const;

/** Early results a run keeps; the callback route's signal budget bounds how many can come at all. */
const MAX_EARLY_RESULTS = 10;

const money = proxyLocalActivities<MobileMoneyActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '30 seconds' },
});

/**
 * A payout (`send-money/<transaction id>`): hold the amount and fee (available balance checked
 * under a lock), send it through B2C with the transaction id as the provider's originator id
 * (a repeat is refused there, so retrying the request can never send twice), wait for the
 * result, then post the payout or release the hold. Every path ends with nothing held.
 *
 * The callback route hands over only results consistent with the payout; one that came before
 * the payout's answer was recorded comes as an early result, applied once the answer's
 * ConversationID is its own. A queue timeout leaves the fate unknown: the route notes it and
 * the run keeps waiting. With no result by `statusQueryAfterMs`, the run asks the provider's
 * Transaction Status, again every `statusQueryIntervalMs` until an answer or a result settles
 * it or the wait ends: completed posts the payout with its receipt, a decline releases the hold
 * with its reason, and "not found" releases it (QUEUE_TIMEOUT: accepted, never processed) only
 * from a query asked that long after the payout was sent; sooner, the payout may still be in the
 * provider's queue (the callback route hands "not found" over only after the payout's queue
 * timeout, too). When the payout's answer was lost (the worker died after the provider took
 * it; the retry was refused as a duplicate), the provider is asked at once instead of adopting
 * the only ConversationID early results name, which a forger holding the URL token could have
 * sent; only if no status answer settles it by the wait's end does that rule still hold (the
 * provider has the payout, and releasing the hold would hand back money already paid out).
 * Runs started before the query (PATCHES.statusQuery) adopt at once and release at the wait's
 * end.
 */
export async function sendMoney(input: SendMoneyInput): Promise<MoneyMovementResult> {
  let outcome: SendMoneyResult | undefined;
  const timeoutIsNoResult = patched(PATCHES.queueTimeoutIsNoResult);
  const asksStatus = patched(PATCHES.statusQuery) && input.statusQueryAfterMs !== undefined;
  setHandler(sendMoneyResultSignal, (incoming) => {
    if (timeoutIsNoResult && incoming.kind === 'timeout') return;
    outcome ??= incoming;
  });
  // Results that beat the payout's answer, kept (a few) until its ConversationID is known. Only
  // runs whose answer carried it (recorded since early results exist) ever apply one: replaying
  // an older history changes nothing.
  let conversationId: string | undefined;
  let answerLost = false;
  const early: SendMoneyResult[] = [];
  // Only a history whose payout step answered `answerLost` (recorded since it exists) adopts one.
  const adoptForLostAnswer = () => {
    if (new Set(early.map((result) => result.conversationId)).size === 1) outcome ??= early[0];
  };
  setHandler(sendMoneyEarlyResultSignal, (incoming) => {
    if (conversationId === undefined) {
      if (early.length < MAX_EARLY_RESULTS) early.push(incoming);
      if (answerLost && !asksStatus) adoptForLostAnswer();
    } else if (incoming.conversationId === conversationId) outcome ??= incoming;
  });
  // Status answers, checked by the callback route. "Not found" counts only from a query asked
  // once the provider had time (`conclusive`); the two sets meet in either order.
  const conclusive = new Set<string>();
  const notFoundBy = new Set<string>();
  const notFound = () => [...notFoundBy].some((queryId) => conclusive.has(queryId));
  setHandler(sendMoneyStatusSignal, (answer) => {
    if (!asksStatus) return;
    if (answer.state === 'not_found') notFoundBy.add(answer.queryId);
    else
      outcome ??= {
        kind: 'result',
        resultCode: answer.state === 'completed' ? '0' : (answer.resultCode ?? ''),
        resultDesc: answer.resultDesc ?? answer.state,
        conversationId: answer.conversationId ?? conversationId,
        receipt: answer.receipt,
      };
  });

  const held = await money.holdFunds(input.transactionId);
  if (!held) return { status: 'FAILED', failureReason: 'INSUFFICIENT_FUNDS' };

  const sent = await money.sendB2c(input.transactionId);
  if (sent.state === 'rejected') {
    await money.releaseFunds(input.transactionId, { reason: 'PAYOUT_REJECTED', resultCode: sent.errorCode });
    return { status: 'FAILED', failureReason: 'PAYOUT_REJECTED' };
  }
  if (sent.conversationId) {
    conversationId = sent.conversationId;
    outcome ??= early.find((result) => result.conversationId === conversationId);
  } else if (sent.answerLost) {
    answerLost = true;
    if (!asksStatus) adoptForLostAnswer();
  }
  if (asksStatus) {
    await waitAsking(
      input,
      answerLost,
      notFound,
      () => outcome !== undefined,
      (queryId) => conclusive.add(queryId),
    );
    if (!outcome && answerLost && !notFound()) adoptForLostAnswer();
  } else await condition(() => outcome !== undefined, input.resultWaitMs);
  if (!outcome && asksStatus && notFound()) {
    await money.releaseFunds(input.transactionId, { reason: 'QUEUE_TIMEOUT' });
    return { status: 'FAILED', failureReason: 'QUEUE_TIMEOUT' };
  }
  if (!outcome) {
    // QUEUE_TIMEOUT when the callback route noted one meanwhile, else NO_RESULT.
    const failureReason = await money.releaseFunds(input.transactionId, { reason: 'NO_RESULT' });
    return { status: 'FAILED', failureReason };
  }
  if (outcome.kind === 'timeout') {
    await money.releaseFunds(input.transactionId, { reason: 'QUEUE_TIMEOUT', resultCode: outcome.resultCode });
    return { status: 'FAILED', failureReason: 'QUEUE_TIMEOUT' };
  }
  if (outcome.resultCode !== '0') {
    const failureReason = await money.releaseFunds(input.transactionId, { resultCode: outcome.resultCode });
    return { status: 'FAILED', failureReason };
  }
  await money.postPayout(input.transactionId, {
    receipt: outcome.receipt,
    completedAt: outcome.completedAt,
    conversationId: outcome.conversationId,
  });
  return { status: 'POSTED' };
}

/**
 * Waits for the payout to settle until `resultWaitMs` ends, asking the provider's Transaction
 * Status from `statusQueryAfterMs` on, every `statusQueryIntervalMs`. A lost answer is asked
 * about at once too, but a "not found" to that query proves nothing (the provider refused our
 * repeat, so it has the payout; its core may not have processed it yet): only queries asked
 * after the wait are `conclusive`. Workflow time: deterministic.
 */
async function waitAsking(
  input: SendMoneyInput,
  answerLost: boolean,
  notFound: () => boolean,
  hasOutcome: () => boolean,
  markConclusive: (queryId: string) => void,
): Promise<void> {
  const settled = () => hasOutcome() || notFound();
  const deadline = Date.now() + input.resultWaitMs;
  const left = () => Math.max(0, deadline - Date.now());
  const ask = async (proves: boolean) => {
    const asked = await money.askPayoutStatus(input.transactionId);
    if (asked.asked && proves) markConclusive(asked.queryId);
  };
  if (answerLost) await ask(false);
  if (left() > 0 && (await condition(settled, Math.min(input.statusQueryAfterMs!, left())))) return;
  while (left() > 0 && !settled()) {
    await ask(true);
    if (left() > 0 && (await condition(settled, Math.min(input.statusQueryIntervalMs ?? left(), left())))) return;
  }
}

import { condition, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { MobileMoneyActivities } from '../../activities';
import {
  type MoneyMovementResult,
  sendMoneyEarlyResultSignal,
  type SendMoneyInput,
  type SendMoneyResult,
  sendMoneyResultSignal,
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
 * The callback route hands over only results consistent with the payout (there is no status
 * query to ask instead); one that came before the payout's answer was recorded comes as an early
 * result, applied once the answer's ConversationID is its own. When that answer was lost (the
 * worker died after the provider took the payout, and the retry was refused as a duplicate), an
 * early result stands for it if it is the only ConversationID early results name: the payout
 * reached the provider, and releasing the hold at the wait's end would hand back money already
 * paid out. A queue timeout leaves the fate unknown: the route notes it and the run keeps waiting
 * for the result, releasing the hold (QUEUE_TIMEOUT) only when the wait ends without one.
 */
export async function sendMoney(input: SendMoneyInput): Promise<MoneyMovementResult> {
  let outcome: SendMoneyResult | undefined;
  const timeoutIsNoResult = patched(PATCHES.queueTimeoutIsNoResult);
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
      if (answerLost) adoptForLostAnswer();
    } else if (incoming.conversationId === conversationId) outcome ??= incoming;
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
    adoptForLostAnswer();
  }
  await condition(() => outcome !== undefined, input.resultWaitMs);
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

import { condition, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { MobileMoneyActivities } from '../../activities';
import { type SendMoneyResult, sendMoneyResultSignal, type MoneyMovementResult, type SendMoneyInput } from './messages';

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
 * query to ask instead). A queue timeout leaves the fate unknown: the route notes it and the run
 * keeps waiting for the result, releasing the hold (QUEUE_TIMEOUT) only when the wait ends
 * without one.
 */
export async function sendMoney(input: SendMoneyInput): Promise<MoneyMovementResult> {
  let outcome: SendMoneyResult | undefined;
  const timeoutIsNoResult = patched(PATCHES.queueTimeoutIsNoResult);
  setHandler(sendMoneyResultSignal, (incoming) => {
    if (timeoutIsNoResult && incoming.kind === 'timeout') return;
    outcome ??= incoming;
  });

  const held = await money.holdFunds(input.transactionId);
  if (!held) return { status: 'FAILED', failureReason: 'INSUFFICIENT_FUNDS' };

  const sent = await money.sendB2c(input.transactionId);
  if (sent.state === 'rejected') {
    await money.releaseFunds(input.transactionId, { reason: 'PAYOUT_REJECTED', resultCode: sent.errorCode });
    return { status: 'FAILED', failureReason: 'PAYOUT_REJECTED' };
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

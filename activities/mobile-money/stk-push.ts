import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { ledgerAccounts, postJournal } from '../../db/ledger/ledger';
import { isUniqueViolation } from '../../db/knex';
import {
  claimPushAttempt,
  confirmPending,
  forgetAttempt,
  lockTransaction,
  markPosted,
  recordProviderIds,
  settleCollection,
  type TransactionRow,
} from '../../db/mobile-money/transactions';
import { Failure } from '../../domain/failures';
import { pushFailureReason, TransactionStatus } from '../../domain/mobile-money/transactions';
import { MobileMoneyError, type StkQueryResult, toWholeShillings } from '../../providers/mobile-money/protocol';
import type { PushSent } from '../../workflows/mobile-money/messages';
import type { Needs } from '../deps';
import { callbackUrls, moneySteps, refused } from './shared';

/** The collection's journal entry: the provider's clearing account pays the customer's account. */
const postCollectionEntry = (trx: Knex.Transaction, row: TransactionRow) =>
  postJournal(trx, {
    transactionId: row.id,
    kind: 'COLLECTION',
    currency: row.currency,
    legs: [
      { account: ledgerAccounts.collections, amount: Number(row.amount) },
      { account: ledgerAccounts.customer(row.account_id), amount: -Number(row.amount) },
    ],
  });

/**
 * The steps of an stk-push run. Each one is safe to run again. A transaction's status only moves
 * forward, from PENDING to CONFIRMED to POSTED, or to FAILED. The COLLECTION journal entry is
 * unique per transaction. A push is never sent twice, because the attempt is recorded before the
 * request leaves. The activity names keep the words they were registered with (sendStkPush,
 * settleCollection, postCollection) because recorded histories name them.
 */
export function createStkPushActivities(deps: Needs<'db' | 'clock' | 'providers' | 'logger', 'PUBLIC_BASE_URL'>) {
  const { db, config, clock, providers } = deps;
  const mm = providers.mobileMoney;
  const { load, fail, withReceipt } = moneySteps(deps);

  return {
    /** Sends the push prompt at most once; a second run reports what the first one learned. */
    async sendStkPush(transactionId: string): Promise<PushSent> {
      const row = await claimPushAttempt(db, transactionId, clock.now());
      if (!row) {
        const earlier = await load(transactionId);
        if (earlier.checkout_request_id)
          return {
            state: 'accepted',
            checkoutRequestId: earlier.checkout_request_id,
            merchantRequestId: earlier.merchant_request_id ?? undefined,
          };
        if (earlier.failure_reason === 'PUSH_REJECTED')
          return { state: 'rejected', errorCode: earlier.result_code ?? undefined };
        return { state: 'indeterminate' };
      }
      const details = row.details as { type?: string; till_number?: string };
      try {
        const accepted = await mm.stkPush({
          amount: toWholeShillings(Number(row.amount)),
          phone: row.mobile_number,
          callbackUrl: callbackUrls(config.PUBLIC_BASE_URL, row).stk,
          accountReference: row.resource_id.slice(-12),
          description: 'Payment',
          transactionType: details.type === 'BUY_GOODS' ? 'CustomerBuyGoodsOnline' : 'CustomerPayBillOnline',
          till: details.type === 'BUY_GOODS' ? details.till_number : undefined,
        });
        await recordProviderIds(
          db,
          row.id,
          { checkout_request_id: accepted.checkoutRequestId, merchant_request_id: accepted.merchantRequestId },
          clock.now(),
        );
        return {
          state: 'accepted',
          checkoutRequestId: accepted.checkoutRequestId,
          merchantRequestId: accepted.merchantRequestId,
        };
      } catch (error) {
        if (!(error instanceof MobileMoneyError) || error.indeterminate) return { state: 'indeterminate' };
        if (refused(error)) {
          // Recorded here, so a rerun of this step reports the refusal rather than an unknown fate.
          await fail(db, row.id, 'PUSH_REJECTED', error.errorCode);
          return { state: 'rejected', errorCode: error.errorCode };
        }
        await forgetAttempt(db, row.id);
        throw error;
      }
    },

    /**
     * Where the provider stands on a push. A definite refusal of the query (a CheckoutRequestID
     * it does not know) is `unknown`; any other failure to get a final answer counts as pending:
     * the workflow asks again at its interval and its deadline still applies, and a callback can
     * settle the push in the meantime (a failing query must not hold the workflow up).
     */
    async queryStkPush(checkoutRequestId: string): Promise<StkQueryResult> {
      try {
        return await mm.stkQuery(checkoutRequestId);
      } catch (error) {
        if (!(error instanceof MobileMoneyError)) throw error;
        if (refused(error)) return { state: 'unknown' };
        deps.logger.warn(
          { checkout_request_id: checkoutRequestId, error_code: error.errorCode, http_status: error.httpStatus },
          'push status query failed; treated as pending',
        );
        return { state: 'pending' };
      }
    },

    /** Records why the transaction failed (from the provider's result code when no reason is given). */
    async failTransaction(transactionId: string, input: { reason?: string; resultCode?: string }): Promise<string> {
      return fail(db, transactionId, input.reason ?? pushFailureReason(input.resultCode ?? ''), input.resultCode);
    },

    /** The provider confirmed the money moved: its receipt (unique) and the time (runs started before settleCollection). */
    async confirmTransaction(
      transactionId: string,
      input: { receipt?: string; transactionDate?: string; checkoutRequestId: string },
    ) {
      await withReceipt(transactionId, input.receipt, (receipt) =>
        confirmPending(db, transactionId, receipt, clock.now()),
      );
    },

    /**
     * A paid push settled in one statement: confirmed with the provider's receipt and
     * posted to the ledger (the provider's clearing account pays the customer's account). The
     * push id that proved the payment is recorded too, and is unique: when it is already another
     * transaction's (a callback of a push whose answer was lost named another push), nothing is
     * posted, the push is FAILED NO_RESULT and the clash logged for reconciliation: UNPROVEN.
     */
    async settleCollection(
      transactionId: string,
      input: { receipt?: string; checkoutRequestId?: string },
    ): Promise<'POSTED' | 'UNPROVEN'> {
      try {
        await withReceipt(transactionId, input.receipt, async (receipt) => {
          const status = await settleCollection(
            db,
            transactionId,
            { receipt, checkoutRequestId: input.checkoutRequestId },
            clock.now(),
          );
          if (status !== TransactionStatus.POSTED)
            throw ApplicationFailure.nonRetryable(
              `transaction ${transactionId} is ${status ?? 'missing'}, not payable`,
              Failure.INVALID_STATE,
            );
        });
        return 'POSTED';
      } catch (error) {
        if (!isUniqueViolation(error, 'transactions_checkout_request_id_unique')) throw error;
        deps.logger.error(
          { transaction_id: transactionId, checkout_request_id: input.checkoutRequestId },
          "the push that proved this payment is another transaction's; nothing posted, to reconcile",
        );
        await fail(db, transactionId, 'NO_RESULT');
        return 'UNPROVEN';
      }
    },

    /** A confirmed collection into the ledger (runs started before settleCollection took both steps). */
    async postCollection(transactionId: string) {
      await db.transaction(async (trx) => {
        const row = await lockTransaction(trx, transactionId);
        if (!row || row.status === TransactionStatus.POSTED) return;
        if (row.status !== TransactionStatus.CONFIRMED)
          throw ApplicationFailure.nonRetryable(
            `transaction ${transactionId} is ${row.status}, not CONFIRMED`,
            Failure.INVALID_STATE,
          );
        await postCollectionEntry(trx, row);
        await markPosted(trx, transactionId, clock.now());
      });
    },
  };
}

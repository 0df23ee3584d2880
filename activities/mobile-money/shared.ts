import { ApplicationFailure } from '@temporalio/common';
import { type Leg } from '../../db/ledger/ledger';
import { isUniqueViolation } from '../../db/knex';
import { failPending, findTransaction, type TransactionRow } from '../../db/mobile-money/transactions';
import type { Knex } from 'knex';
import { Failure } from '../../domain/failures';
import type { MobileMoneyError } from '../../providers/mobile-money/protocol';
import type { Needs } from '../deps';

/** Callback addresses carry the transaction id and its unguessable token: the provider signs nothing. */
export function callbackUrls(publicBaseUrl: string | undefined, row: Pick<TransactionRow, 'id' | 'callback_token'>) {
  const base = `${publicBaseUrl}/v1/transactions/mobilemoney/callbacks`;
  return {
    stk: `${base}/stk/${row.id}/${row.callback_token}`,
    b2cResult: `${base}/b2c/${row.id}/${row.callback_token}/result`,
    b2cTimeout: `${base}/b2c/${row.id}/${row.callback_token}/timeout`,
  };
}

/** A payout status query's addresses: its own id and token, so a leaked payout URL cannot answer for the provider. */
export function statusCallbackUrls(publicBaseUrl: string | undefined, query: { id: string; token: string }) {
  const base = `${publicBaseUrl}/v1/transactions/mobilemoney/callbacks/b2c-status/${query.id}/${query.token}`;
  return { result: `${base}/result`, timeout: `${base}/timeout` };
}

/**
 * A definite refusal of the request itself (not the OAuth step, not a transport failure, not the
 * provider's rate limit: a 429 turns the request away before it is looked at, so it is retried).
 */
export const refused = (error: MobileMoneyError) =>
  !error.indeterminate &&
  error.operation !== 'oauth' &&
  error.httpStatus !== undefined &&
  error.httpStatus >= 400 &&
  error.httpStatus < 500 &&
  error.httpStatus !== 429;

const total = (row: TransactionRow) => Number(row.amount) + Number(row.fee_amount);
/** The legs that move a transaction's amount and fee from one ledger account to another. */
export const move = (row: TransactionRow, from: string, to: string): Leg[] => [
  { account: from, amount: total(row) },
  { account: to, amount: -total(row) },
];
export { total };

/** What collections and payouts share: the run's own transaction, failing it, and recording a receipt. */
export function moneySteps(deps: Needs<'db' | 'clock' | 'logger'>) {
  const { db, clock } = deps;
  return {
    async load(transactionId: string): Promise<TransactionRow> {
      const row = await findTransaction(db, transactionId);
      if (!row) throw ApplicationFailure.nonRetryable(`transaction ${transactionId} does not exist`, Failure.NOT_FOUND);
      return row;
    },

    /** A PENDING transaction FAILED with its reason (nothing changes once it is final). */
    async fail(
      q: Knex | Knex.Transaction,
      transactionId: string,
      reason: string,
      resultCode?: string,
    ): Promise<string> {
      await failPending(q, transactionId, reason, resultCode, clock.now());
      return reason;
    },

    /**
     * Records a paid transaction with the provider's receipt. A receipt already on another
     * transaction (a provider anomaly, or two callbacks racing past the route's check) would fail
     * the unique constraint on every retry and leave the money unposted: the provider still says
     * this transaction paid, so it is recorded without the receipt (as a status query would) and
     * the clash logged for reconciliation.
     */
    async withReceipt(
      transactionId: string,
      receipt: string | undefined,
      record: (receipt: string | undefined) => Promise<void>,
    ): Promise<void> {
      try {
        await record(receipt);
      } catch (error) {
        if (receipt === undefined || !isUniqueViolation(error, 'transactions_mobilemoney_transaction_id_unique'))
          throw error;
        deps.logger.error(
          { transaction_id: transactionId, receipt },
          'receipt already recorded on another transaction; recorded without it, to reconcile',
        );
        await record(undefined);
      }
    },
  };
}

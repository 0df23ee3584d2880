import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { accountBalance, ledgerAccounts, type Leg, postJournal } from '../../db/ledger/ledger';
import { isUniqueViolation } from '../../db/knex';
import { findTransaction, type TransactionRow } from '../../db/mobile-money/transactions';
import { payoutFailureReason, pushFailureReason, TransactionStatus } from '../../domain/mobile-money/transaction';
import { MobileMoneyError, type StkQueryResult, toWholeShillings } from '../../providers/mobile-money/client';
import { Failure } from '../../domain/failures';
import type { PayoutSent, PushSent } from '../../workflows/mobile-money/messages';
import type { ActivityDeps } from '../index';


/** Callback addresses carry the transaction id and its unguessable token: the provider signs nothing. */
export function callbackUrls(publicBaseUrl: string | undefined, row: Pick<TransactionRow, 'id' | 'callback_token'>) {
  const base = `${publicBaseUrl}/v1/transactions/mobilemoney/callbacks`;
  return {
    stk: `${base}/stk/${row.id}/${row.callback_token}`,
    b2cResult: `${base}/b2c/${row.id}/${row.callback_token}/result`,
    b2cTimeout: `${base}/b2c/${row.id}/${row.callback_token}/timeout`,
  };
}

/**
 * A definite refusal of the request itself (not the OAuth step, not a transport failure, not the
 * provider's rate limit: a 429 turns the request away before it is looked at, so it is retried).
 */
const refused = (error: MobileMoneyError) =>
  !error.indeterminate && error.operation !== 'oauth' && error.httpStatus !== undefined && error.httpStatus >= 400 && error.httpStatus < 500 && error.httpStatus !== 429;

/**
 * The mobile-money activities. Each is safe to run again: states only move forward (PENDING →
 * CONFIRMED → POSTED, or → FAILED), journal entries are unique per transaction and kind, and a
 * push is never sent twice (the attempt is recorded before the request leaves).
 */
export function createMobileMoneyActivities(deps: ActivityDeps) {
  const { db, config, clock, providers } = deps;
  const mm = providers.mobileMoney;

  async function load(transactionId: string): Promise<TransactionRow> {
    const row = await findTransaction(db, transactionId);
    if (!row) throw ApplicationFailure.nonRetryable(`transaction ${transactionId} does not exist`, Failure.NOT_FOUND);
    return row;
  }
  const total = (row: TransactionRow) => Number(row.amount) + Number(row.fee_amount);
  /** The legs that move a transaction's amount and fee from one ledger account to another. */
  const move = (row: TransactionRow, from: string, to: string): Leg[] => [
    { account: from, amount: total(row) },
    { account: to, amount: -total(row) },
  ];

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
   * Records a paid transaction with the provider's receipt. A receipt already on another
   * transaction (a provider anomaly, or two callbacks racing past the route's check) would fail
   * the unique constraint on every retry and leave the money unposted: the provider still says
   * this transaction paid, so it is recorded without the receipt (as a status query would) and
   * the clash logged for reconciliation.
   */
  async function withReceipt(transactionId: string, receipt: string | undefined, record: (receipt: string | undefined) => Promise<void>) {
    try {
      await record(receipt);
    } catch (error) {
      if (receipt === undefined || !isUniqueViolation(error, 'transactions_mobilemoney_transaction_id_unique')) throw error;
      deps.logger.error({ transaction_id: transactionId, receipt }, 'receipt already recorded on another transaction; recorded without it, to reconcile');
      await record(undefined);
    }
  }

  /** Certainly not sent (OAuth failed, connection refused, rate limited): the next attempt may send it. */
  const forgetAttempt = (transactionId: string) => db('transactions').where({ id: transactionId }).update({ provider_request_attempted_at: null });

  /** A PENDING transaction FAILED with its reason (nothing changes once it is final). */
  async function fail(q: Knex | Knex.Transaction, transactionId: string, reason: string, resultCode?: string) {
    const now = clock.now();
    await q('transactions')
      .where({ id: transactionId, status: TransactionStatus.PENDING })
      .update({ status: TransactionStatus.FAILED, failure_reason: reason, result_code: resultCode ?? null, failed_at: now, updated_at: now });
    return reason;
  }

  return {
    /** Sends the push prompt at most once; a second run reports what the first one learned. */
    async sendStkPush(transactionId: string): Promise<PushSent> {
      // Claims the one attempt and reads the row in one statement; a rerun finds it claimed.
      const [row] = await db('transactions')
        .where({ id: transactionId, provider_request_attempted_at: null, checkout_request_id: null })
        .update({ provider_request_attempted_at: clock.now() })
        .returning<TransactionRow[]>('*');
      if (!row) {
        const earlier = await load(transactionId);
        if (earlier.checkout_request_id) return { state: 'accepted', checkoutRequestId: earlier.checkout_request_id, merchantRequestId: earlier.merchant_request_id ?? undefined };
        if (earlier.failure_reason === 'PUSH_REJECTED') return { state: 'rejected', errorCode: earlier.result_code ?? undefined };
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
        await db('transactions')
          .where({ id: row.id })
          .update({ checkout_request_id: accepted.checkoutRequestId, merchant_request_id: accepted.merchantRequestId, updated_at: clock.now() });
        return { state: 'accepted', checkoutRequestId: accepted.checkoutRequestId, merchantRequestId: accepted.merchantRequestId };
      } catch (error) {
        if (!(error instanceof MobileMoneyError) || error.indeterminate) return { state: 'indeterminate' };
        if (refused(error)) {
          // Recorded here, so a rerun of this step reports the refusal rather than an unknown fate.
          await fail(db, row.id, 'PUSH_REJECTED', error.errorCode);
          return { state: 'rejected', errorCode: error.errorCode };
        }
        await forgetAttempt(row.id);
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
        deps.logger.warn({ checkout_request_id: checkoutRequestId, error_code: error.errorCode, http_status: error.httpStatus }, 'push status query failed; treated as pending');
        return { state: 'pending' };
      }
    },

    /** Records why the transaction failed (from the provider's result code when no reason is given). */
    async failTransaction(transactionId: string, input: { reason?: string; resultCode?: string }): Promise<string> {
      return fail(db, transactionId, input.reason ?? pushFailureReason(input.resultCode ?? ''), input.resultCode);
    },

    /** The provider confirmed the money moved: its receipt (unique) and the time (runs started before settleCollection). */
    async confirmTransaction(transactionId: string, input: { receipt?: string; transactionDate?: string; checkoutRequestId: string }) {
      await withReceipt(transactionId, input.receipt, async (receipt) => {
        const now = clock.now();
        await db('transactions')
          .where({ id: transactionId, status: TransactionStatus.PENDING })
          .update({ status: TransactionStatus.CONFIRMED, mobilemoney_transaction_id: receipt ?? null, result_code: '0', confirmed_at: now, updated_at: now });
      });
    },

    /**
     * A paid push settled in one database transaction: confirmed with the provider's receipt and
     * posted to the ledger (the provider's clearing account pays the customer's account). The
     * push id that proved the payment is recorded too, and is unique: when it is already another
     * transaction's (a callback of a push whose answer was lost named another push), nothing is
     * posted, the push is FAILED NO_RESULT and the clash logged for reconciliation: UNPROVEN.
     */
    async settleCollection(transactionId: string, input: { receipt?: string; checkoutRequestId?: string }): Promise<'POSTED' | 'UNPROVEN'> {
      try {
        await withReceipt(transactionId, input.receipt, (receipt) => db.transaction(async (trx) => {
          const now = clock.now();
          const [row] = await trx('transactions')
            .where({ id: transactionId })
            .whereIn('status', [TransactionStatus.PENDING, TransactionStatus.CONFIRMED])
            .update({
              status: TransactionStatus.POSTED,
              mobilemoney_transaction_id: trx.raw('coalesce(?, mobilemoney_transaction_id)', [receipt ?? null]),
              checkout_request_id: trx.raw('coalesce(checkout_request_id, ?)', [input.checkoutRequestId ?? null]),
              result_code: '0',
              confirmed_at: trx.raw('coalesce(confirmed_at, ?)', [now]),
              posted_at: now,
              updated_at: now,
            })
            .returning<TransactionRow[]>('*');
          if (row) {
            await postCollectionEntry(trx, row);
            return;
          }
          const current = await findTransaction(trx, transactionId);
          if (current?.status !== TransactionStatus.POSTED) throw ApplicationFailure.nonRetryable(`transaction ${transactionId} is ${current?.status ?? 'missing'}, not payable`, Failure.INVALID_STATE);
        }));
        return 'POSTED';
      } catch (error) {
        if (!isUniqueViolation(error, 'transactions_checkout_request_id_unique')) throw error;
        deps.logger.error({ transaction_id: transactionId, checkout_request_id: input.checkoutRequestId }, 'the push that proved this payment is another transaction\'s; nothing posted, to reconcile');
        await fail(db, transactionId, 'NO_RESULT');
        return 'UNPROVEN';
      }
    },

    /** A confirmed collection into the ledger (runs started before settleCollection took both steps). */
    async postCollection(transactionId: string) {
      await db.transaction(async (trx) => {
        const row = await trx('transactions').where({ id: transactionId }).forUpdate().first<TransactionRow>();
        if (!row || row.status === TransactionStatus.POSTED) return;
        if (row.status !== TransactionStatus.CONFIRMED) throw ApplicationFailure.nonRetryable(`transaction ${transactionId} is ${row.status}, not CONFIRMED`, Failure.INVALID_STATE);
        await postCollectionEntry(trx, row);
        const now = clock.now();
        await trx('transactions').where({ id: transactionId }).update({ status: TransactionStatus.POSTED, posted_at: now, updated_at: now });
      });
    },

    /**
     * Holds the payout's amount and fee when the account has them available, under a lock on
     * the account so two payouts cannot both spend the same money. False (and the transaction
     * FAILED) when it does not.
     */
    async holdFunds(transactionId: string): Promise<boolean> {
      return db.transaction(async (trx) => {
        const row = await trx('transactions').where({ id: transactionId }).first<TransactionRow>();
        if (!row) throw ApplicationFailure.nonRetryable(`transaction ${transactionId} does not exist`, Failure.NOT_FOUND);
        await trx('accounts').where({ id: row.account_id }).forUpdate().first();
        if (await trx('journal_entries').where({ transaction_id: transactionId, kind: 'HOLD' }).first()) return true;
        if (row.status !== TransactionStatus.PENDING) return false;
        const { available } = await accountBalance(trx, row.account_id);
        if (available < total(row)) {
          await fail(trx, transactionId, 'INSUFFICIENT_FUNDS');
          return false;
        }
        await postJournal(trx, { transactionId, kind: 'HOLD', currency: row.currency, legs: move(row, ledgerAccounts.customer(row.account_id), ledgerAccounts.hold(row.account_id)) });
        return true;
      });
    },

    /**
     * Sends the payout. Our transaction id is the provider's OriginatorConversationID and a
     * repeat is refused there, so after an indeterminate answer the request is simply sent again.
     * The attempt is recorded before the request leaves: once one may have reached the provider,
     * a later attempt's refusal says nothing of it, so only its result or queue timeout (or the
     * wait running out) decides, and the hold is not released on that refusal.
     */
    async sendB2c(transactionId: string): Promise<PayoutSent> {
      const row = await load(transactionId);
      if (row.conversation_id) return { state: 'accepted' };
      const triedBefore = row.provider_request_attempted_at !== null;
      if (!triedBefore) await db('transactions').where({ id: row.id }).update({ provider_request_attempted_at: clock.now() });
      const urls = callbackUrls(config.PUBLIC_BASE_URL, row);
      try {
        const accepted = await mm.b2c({
          originatorConversationId: row.id,
          amount: toWholeShillings(Number(row.amount)),
          phone: row.mobile_number,
          resultUrl: urls.b2cResult,
          queueTimeoutUrl: urls.b2cTimeout,
          remarks: `Payout ${row.resource_id}`,
        });
        await db('transactions').where({ id: row.id }).update({ conversation_id: accepted.conversationId, updated_at: clock.now() });
        return { state: 'accepted' };
      } catch (error) {
        if (!(error instanceof MobileMoneyError)) throw error;
        if (error.duplicateRequest) return { state: 'accepted' };
        if (refused(error)) {
          if (!triedBefore) return { state: 'rejected', errorCode: error.errorCode };
          deps.logger.warn({ transaction_id: row.id, error_code: error.errorCode, http_status: error.httpStatus }, 'payout retry refused after an attempt of unknown fate; its result decides');
          return { state: 'accepted' };
        }
        if (!error.indeterminate && !triedBefore) await forgetAttempt(row.id);
        throw error;
      }
    },

    /**
     * Gives the held money back and records why the payout failed. A payout whose wait ended
     * (NO_RESULT) after the provider reported a queue timeout failed QUEUE_TIMEOUT.
     */
    async releaseFunds(transactionId: string, input: { reason?: string; resultCode?: string }): Promise<string> {
      let reason = input.reason ?? payoutFailureReason(input.resultCode ?? '');
      await db.transaction(async (trx) => {
        const row = await trx('transactions').where({ id: transactionId }).forUpdate().first<TransactionRow>();
        if (!row || row.status !== TransactionStatus.PENDING) return;
        if (reason === 'NO_RESULT' && row.queue_timeout_at) reason = 'QUEUE_TIMEOUT';
        const held = await trx('journal_entries').where({ transaction_id: transactionId, kind: 'HOLD' }).first();
        if (held) {
          await postJournal(trx, { transactionId, kind: 'RELEASE', currency: row.currency, legs: move(row, ledgerAccounts.hold(row.account_id), ledgerAccounts.customer(row.account_id)) });
        }
        await fail(trx, transactionId, reason, input.resultCode);
      });
      return reason;
    },

    /** The payout went through: the held money leaves to the provider, the fee to our income. */
    async postPayout(transactionId: string, input: { receipt?: string; completedAt?: string; conversationId?: string }) {
      await withReceipt(transactionId, input.receipt, (receipt) => db.transaction(async (trx) => {
        const row = await trx('transactions').where({ id: transactionId }).forUpdate().first<TransactionRow>();
        if (!row || row.status === TransactionStatus.POSTED) return;
        if (row.status !== TransactionStatus.PENDING) throw ApplicationFailure.nonRetryable(`transaction ${transactionId} is ${row.status}`, Failure.INVALID_STATE);
        const amount = Number(row.amount);
        const fee = Number(row.fee_amount);
        const legs: Leg[] = [
          { account: ledgerAccounts.hold(row.account_id), amount: amount + fee },
          { account: ledgerAccounts.disbursements, amount: -amount },
        ];
        if (fee > 0) legs.push({ account: ledgerAccounts.feeIncome, amount: -fee });
        await postJournal(trx, { transactionId, kind: 'PAYOUT', currency: row.currency, legs });
        const now = clock.now();
        await trx('transactions')
          .where({ id: transactionId })
          .update({
            status: TransactionStatus.POSTED,
            mobilemoney_transaction_id: receipt ?? null,
            conversation_id: input.conversationId ?? row.conversation_id,
            result_code: '0',
            confirmed_at: now,
            posted_at: now,
            updated_at: now,
          });
      }));
    },
  };
}

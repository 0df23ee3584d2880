import { randomBytes, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { lockAccount } from '../../db/accounts/accounts';
import { accountBalance, hasJournalEntry, ledgerAccounts, type Leg, postJournal } from '../../db/ledger/ledger';
import {
  findTransaction,
  forgetAttempt,
  lockTransaction,
  markPayoutPosted,
  recordAttempt,
  recordProviderIds,
} from '../../db/mobile-money/transactions';
import { createStatusQuery, recordStatusQueryAnswer } from '../../db/mobile-money/send-money-status';
import { Failure } from '../../domain/failures';
import { payoutFailureReason, TransactionStatus } from '../../domain/mobile-money/transactions';
import { MobileMoneyError, toWholeShillings } from '../../providers/mobile-money/protocol';
import type { PayoutSent, SendMoneyStatusAsked } from '../../workflows/mobile-money/messages';
import type { Needs } from '../deps';
import { callbackUrls, moneySteps, move, refused, statusCallbackUrls, total } from './shared';

/**
 * The steps of a send-money run. Each one is safe to run again. The HOLD, PAYOUT and RELEASE
 * journal entries are unique per transaction, and a transaction's status only moves forward. A
 * payout cannot be paid twice, because our transaction id is the provider's
 * OriginatorConversationID and the provider refuses to repeat one. The activity names keep the
 * words they were registered with (sendB2c, askPayoutStatus, postPayout) because recorded
 * histories name them.
 */
export function createSendMoneyActivities(deps: Needs<'db' | 'clock' | 'providers' | 'logger', 'PUBLIC_BASE_URL'>) {
  const { db, config, clock, providers } = deps;
  const mm = providers.mobileMoney;
  const { load, fail, withReceipt } = moneySteps(deps);

  return {
    /**
     * Holds the payout's amount and fee when the account has them available, under a lock on
     * the account so two payouts cannot both spend the same money. False (and the transaction
     * FAILED) when it does not.
     */
    async holdFunds(transactionId: string): Promise<boolean> {
      return db.transaction(async (trx) => {
        const seen = await findTransaction(trx, transactionId);
        if (!seen)
          throw ApplicationFailure.nonRetryable(`transaction ${transactionId} does not exist`, Failure.NOT_FOUND);
        await lockAccount(trx, seen.account_id);
        // Read again under the account's lock: the API withdraws an unstarted payout under the
        // same lock, and a hold placed for a row read before that would never be released.
        const row = await findTransaction(trx, transactionId);
        if (!row)
          throw ApplicationFailure.nonRetryable(`transaction ${transactionId} was withdrawn`, Failure.NOT_FOUND);
        if (await hasJournalEntry(trx, transactionId, 'HOLD')) return true;
        if (row.status !== TransactionStatus.PENDING) return false;
        const { available } = await accountBalance(trx, row.account_id);
        if (available < total(row)) {
          await fail(trx, transactionId, 'INSUFFICIENT_FUNDS');
          return false;
        }
        await postJournal(trx, {
          transactionId,
          kind: 'HOLD',
          currency: row.currency,
          legs: move(row, ledgerAccounts.customer(row.account_id), ledgerAccounts.hold(row.account_id)),
        });
        return true;
      });
    },

    /**
     * Sends the payout. Our transaction id is the provider's OriginatorConversationID and a
     * repeat is refused there, so after an indeterminate answer the request is simply sent again.
     * The attempt is recorded before the request leaves: once one may have reached the provider,
     * a later attempt's refusal says nothing of it, so only its result (or the wait running out)
     * decides, and the hold is not released on that refusal.
     */
    async sendB2c(transactionId: string): Promise<PayoutSent> {
      const row = await load(transactionId);
      if (row.conversation_id) return { state: 'accepted', conversationId: row.conversation_id };
      const triedBefore = row.provider_request_attempted_at !== null;
      if (!triedBefore) await recordAttempt(db, row.id, clock.now());
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
        await recordProviderIds(db, row.id, { conversation_id: accepted.conversationId }, clock.now());
        return { state: 'accepted', conversationId: accepted.conversationId };
      } catch (error) {
        if (!(error instanceof MobileMoneyError)) throw error;
        // An earlier attempt reached the provider, and its answer never reached the row (the
        // worker died in between): only the result can tell its ConversationID now.
        if (error.duplicateRequest) return { state: 'accepted', answerLost: true };
        if (refused(error)) {
          if (!triedBefore) return { state: 'rejected', errorCode: error.errorCode };
          deps.logger.warn(
            { transaction_id: row.id, error_code: error.errorCode, http_status: error.httpStatus },
            'payout retry refused after an attempt of unknown fate; its result decides',
          );
          // The first attempt's answer never reached the row either: as with a duplicate, only
          // its result can tell its ConversationID.
          return { state: 'accepted', answerLost: true };
        }
        if (!error.indeterminate && !triedBefore) await forgetAttempt(db, row.id);
        throw error;
      }
    },

    /**
     * Asks the provider's Transaction Status about the payout (by our OriginatorConversationID);
     * the answer comes to the query's own URL, token recorded first. Asking again is harmless, so
     * a query the provider refuses or cannot take is logged and reported not asked, never
     * retried here: the run asks again at its next interval.
     */
    async askPayoutStatus(transactionId: string): Promise<SendMoneyStatusAsked> {
      const row = await load(transactionId);
      if (row.status !== TransactionStatus.PENDING) return { asked: false };
      const query = {
        id: randomUUID(),
        transaction_id: row.id,
        organization_id: row.organization_id,
        token: randomBytes(24).toString('base64url'),
        asked_at: clock.now(),
      };
      await createStatusQuery(db, query);
      const urls = statusCallbackUrls(config.PUBLIC_BASE_URL, query);
      try {
        const accepted = await mm.transactionStatus({
          originalConversationId: row.id,
          resultUrl: urls.result,
          queueTimeoutUrl: urls.timeout,
          remarks: `Status of payout ${row.resource_id}`,
        });
        await recordStatusQueryAnswer(db, query.id, accepted);
        return { asked: true, queryId: query.id };
      } catch (error) {
        if (!(error instanceof MobileMoneyError)) throw error;
        deps.logger.warn(
          { transaction_id: row.id, error_code: error.errorCode, http_status: error.httpStatus },
          'payout status query not taken; asked again at the next interval',
        );
        return { asked: false };
      }
    },

    /**
     * Gives the held money back and records why the payout failed. A payout whose wait ended
     * (NO_RESULT) after the provider reported a queue timeout failed QUEUE_TIMEOUT.
     */
    async releaseFunds(transactionId: string, input: { reason?: string; resultCode?: string }): Promise<string> {
      let reason = input.reason ?? payoutFailureReason(input.resultCode ?? '');
      await db.transaction(async (trx) => {
        const row = await lockTransaction(trx, transactionId);
        if (!row || row.status !== TransactionStatus.PENDING) return;
        if (reason === 'NO_RESULT' && row.queue_timeout_at) reason = 'QUEUE_TIMEOUT';
        if (await hasJournalEntry(trx, transactionId, 'HOLD')) {
          await postJournal(trx, {
            transactionId,
            kind: 'RELEASE',
            currency: row.currency,
            legs: move(row, ledgerAccounts.hold(row.account_id), ledgerAccounts.customer(row.account_id)),
          });
        }
        // A decline reported without its code has none to record.
        await fail(trx, transactionId, reason, input.resultCode || undefined);
      });
      return reason;
    },

    /** The payout went through: the held money leaves to the provider, the fee to our income. */
    async postPayout(
      transactionId: string,
      input: { receipt?: string; completedAt?: string; conversationId?: string },
    ) {
      await withReceipt(transactionId, input.receipt, (receipt) =>
        db.transaction(async (trx) => {
          const row = await lockTransaction(trx, transactionId);
          if (!row || row.status === TransactionStatus.POSTED) return;
          if (row.status !== TransactionStatus.PENDING)
            throw ApplicationFailure.nonRetryable(
              `transaction ${transactionId} is ${row.status}`,
              Failure.INVALID_STATE,
            );
          const amount = Number(row.amount);
          const fee = Number(row.fee_amount);
          const legs: Leg[] = [
            { account: ledgerAccounts.hold(row.account_id), amount: amount + fee },
            { account: ledgerAccounts.disbursements, amount: -amount },
          ];
          if (fee > 0) legs.push({ account: ledgerAccounts.feeIncome, amount: -fee });
          await postJournal(trx, { transactionId, kind: 'PAYOUT', currency: row.currency, legs });
          await markPayoutPosted(
            trx,
            transactionId,
            { receipt, conversationId: input.conversationId ?? row.conversation_id },
            clock.now(),
          );
        }),
      );
    },
  };
}

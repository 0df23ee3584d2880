import { defineSignal } from '@temporalio/workflow';

/** Messages of the stk-push and send-money workflows, importable by the API without their bodies. */

export interface StkPushInput {
  transactionId: string;
  /** The transaction's organization (absent in runs started before it was carried). */
  organizationId?: string;
  /** How long to wait for the callback before asking the provider. */
  callbackWaitMs: number;
  /** Then: how often to ask, and for how long before giving the push up (FAILED, NO_RESULT). */
  queryIntervalMs: number;
  queryDeadlineMs: number;
  /** A push on a credit account: once POSTED it is a repayment, handed to the loan's run (absent before repayments). */
  repayment?: boolean;
}

/**
 * A push prompt's result, from a status query, or from a callback complete and consistent with
 * the push (both request ids, amount, phone, an unused well-formed receipt): final either way.
 */
export interface StkResult {
  source: 'callback' | 'query';
  checkoutRequestId: string;
  /** A callback's: checked by the run against the push's own when the route could not. */
  merchantRequestId?: string;
  /** '0' is paid; anything else is a refusal (stringified: the provider sometimes sends strings). */
  resultCode: string;
  resultDesc: string;
  receipt?: string;
  /** When the provider says the money moved (callback TransactionDate), ISO 8601. */
  transactionDate?: string;
}

/**
 * A push callback that does not settle the push by itself: a refusal, anything incomplete or
 * inconsistent, or any callback at all under STK_PUSH_CONFIRM_SUCCESS. The run asks the
 * provider's status query now instead of at its next interval.
 */
export interface StkCallbackTrigger {
  /** What the callback names: asked about when the run never learned its own (the push's answer was lost). */
  checkoutRequestId: string;
  /** The callback's receipt when its amount, phone and receipt were right: kept if the query confirms the payment. */
  receipt?: string;
}

export interface SendMoneyInput {
  transactionId: string;
  /** The transaction's organization (absent in runs started before it was carried). */
  organizationId?: string;
  /** How long to wait for the B2C result or queue timeout. */
  resultWaitMs: number;
  /**
   * With no result by then, the provider's Transaction Status is asked, and again every
   * interval until the wait ends (absent in runs started before the query was asked).
   */
  statusQueryAfterMs?: number;
  statusQueryIntervalMs?: number;
}

/** A B2C result or queue timeout, as the callback route hands it over. */
export interface SendMoneyResult {
  kind: 'result' | 'timeout';
  resultCode: string;
  resultDesc: string;
  conversationId?: string;
  receipt?: string;
  completedAt?: string;
}

/**
 * What the provider's Transaction Status said of a payout, checked by the callback route against
 * the query it answers (its own URL token and ids) and the payout (our OriginatorConversationID;
 * when completed, the amount, recipient and an unused receipt). Only final answers come:
 * completed, failed (declined, cancelled, expired), or not found (the provider does not know it).
 */
export interface SendMoneyStatusAnswer {
  /** The query it answers (the run knows which of its queries were asked when "not found" means something). */
  queryId: string;
  state: 'completed' | 'failed' | 'not_found';
  /** The payout's ConversationID as the provider reports it. */
  conversationId?: string;
  receipt?: string;
  /** A failed payout's own result code and description, when the provider gives them. */
  resultCode?: string;
  resultDesc?: string;
}

/**
 * A status query asked (its id, which its answer names), or not (the provider refused it or
 * could not be reached: asked again at the next interval).
 */
export type SendMoneyStatusAsked = { asked: true; queryId: string } | { asked: false };

/** What sending a push prompt came to: accepted (with the provider's ids), refused, or unknown (its answer was lost). */
export type PushSent =
  | { state: 'accepted'; checkoutRequestId: string; merchantRequestId?: string }
  | { state: 'rejected'; errorCode?: string }
  | { state: 'indeterminate' };
/**
 * What sending a payout came to: accepted (queued at the provider; with the ConversationID it
 * answered, unless that answer was lost; runs started before it was carried have none) or refused.
 */
export type PayoutSent =
  | {
      state: 'accepted';
      conversationId?: string;
      /** A retry was refused as a duplicate: an earlier attempt reached the provider and its answer was lost. */
      answerLost?: boolean;
    }
  | { state: 'rejected'; errorCode?: string };

export interface MoneyMovementResult {
  status: 'POSTED' | 'FAILED';
  failureReason?: string;
}

export const stkResultSignal = defineSignal<[StkResult]>('stkResult');
/** Runs started before callbacks became triggers have no handler for it and ignore it. */
export const stkCallbackSignal = defineSignal<[StkCallbackTrigger]>('stkCallback');
/** Its wire name predates the area's one name; runs in flight listen for it. */
export const sendMoneyResultSignal = defineSignal<[SendMoneyResult]>('b2cOutcome');
/**
 * A B2C result that came before the payout's answer was recorded, otherwise consistent: the run
 * applies it only once that answer's ConversationID is the result's; when that answer was lost,
 * only if every early result names the same ConversationID. Runs started before answers carried
 * their ConversationID never apply one.
 */
export const sendMoneyEarlyResultSignal = defineSignal<[SendMoneyResult]>('sendMoneyEarlyResult');
/** A payout's Transaction Status answer; runs started before the query was asked ignore it. */
export const sendMoneyStatusSignal = defineSignal<[SendMoneyStatusAnswer]>('sendMoneyStatus');

import { normalizeKenyanMobile } from '../identifiers';
import { MINOR_PER_SHILLING } from './transactions';

/**
 * What a mobile-money callback proves on its own. The provider signs nothing: a callback is a
 * trigger, and only one that is complete and consistent with the request we sent may settle a
 * transaction by itself. Pure, so the rules are property-tested and read in one place (README,
 * "What a callback must show").
 */

/** The provider's receipt numbers: ten upper-case letters and digits (e.g. `NLJ7RT61SV`). */
export const RECEIPT = /^[A-Z0-9]{10}$/;

/**
 * Callbacks a transaction may hand to its run. Only callbacks the route could not prove
 * (triggers, results whose request ids the run checks) can be sent by someone holding a leaked
 * URL token: past the budget they are recorded, not signalled, and the push's own status
 * queries settle it. Keeps a flood from growing a run's history toward Temporal's limits.
 */
export const MAX_CALLBACK_SIGNALS = 10;
/** Of those, what B2C results arriving before the payout's answer (EARLY) may spend. */
export const MAX_EARLY_CALLBACK_SIGNALS = 5;

/** A whole number of shillings as callbacks carry it (`100`, `"100"`, `100.0`), else undefined (`"0x64"`, `100.004`). */
export function wholeShillings(value: unknown): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,15}(\.0{1,2})?$/.test(value)
        ? Number(value)
        : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The push as we sent it and as the provider acknowledged it. */
export interface PendingPush {
  /** Null until the push request's answer is recorded (or when it was lost): the run checks them then. */
  checkoutRequestId: string | null;
  merchantRequestId: string | null;
  amountMinor: number;
  /** `+254...` */
  phone: string;
}

export interface PushCallbackFacts {
  checkoutRequestId: string;
  merchantRequestId: string;
  resultCode: string;
  /** As sent: a number or text. */
  amount?: unknown;
  receipt?: string;
  /** As sent: any form, or masked. */
  phone?: string;
}

export interface Assessment {
  /** The callback alone may settle the transaction. */
  settles: boolean;
  /** Why not, as short phrases (recorded with the callback). */
  problems: string[];
  /**
   * It reports a payment whose amount, phone and receipt are right, and no request id of it
   * contradicts ours (they match, or are not known here yet): its receipt may be kept once the
   * provider confirms the payment.
   */
  paymentMatches: boolean;
}

/**
 * A paid push callback settles its transaction by itself only when both request ids are ours
 * (when they are not recorded yet, the run compares them with the push's answer, and confirms
 * by the status query when that answer was lost), the amount and the phone are there and
 * match, and a well-formed receipt is there (its uniqueness is the caller's to check). A
 * refusal never does: it is confirmed by the status query, as is everything incomplete or
 * inconsistent.
 */
export function assessPushCallback(push: PendingPush, callback: PushCallbackFacts): Assessment {
  const problems: string[] = [];
  // Ids not yet recorded (the callback beat the push's answer) are checked by the run itself.
  if (push.checkoutRequestId !== null) {
    if (callback.checkoutRequestId !== push.checkoutRequestId) problems.push('another CheckoutRequestID');
    if (push.merchantRequestId !== null && callback.merchantRequestId !== push.merchantRequestId)
      problems.push('another MerchantRequestID');
  }
  const idsContradict = problems.length > 0;
  if (callback.resultCode !== '0') {
    problems.push('a refusal is confirmed by the status query');
    return { settles: false, problems, paymentMatches: false };
  }
  const payment = paymentProblems(push.amountMinor, push.phone, callback.amount, callback.phone, callback.receipt);
  problems.push(...payment);
  return { settles: problems.length === 0, problems, paymentMatches: payment.length === 0 && !idsContradict };
}

/** The payout as we sent it and as the provider acknowledged it. */
export interface PendingPayout {
  id: string;
  /** Null when the payout request's answer was lost: the provider's ConversationID is unknown here. */
  conversationId: string | null;
  amountMinor: number;
  phone: string;
}

export interface PayoutResultFacts {
  originatorConversationId: string;
  conversationId: string;
  resultCode: string;
  amount?: unknown;
  receipt?: string;
  /** ReceiverPartyPublicName: `2547... - Name`. */
  receiver?: string;
}

/**
 * A B2C result is applied only when it is ours and consistent: our OriginatorConversationID
 * (which the URL shows too) and the ConversationID the provider answered the payout with; a
 * success also with the amount, the recipient's number and a well-formed receipt. Anything else
 * is recorded and escalated, never applied: the run's Transaction Status queries settle the
 * payout (./send-money-status.ts). A result for a payout whose ConversationID is not recorded yet
 * `awaitsAnswer` when all else is right: the run applies it only if the payout's answer brings
 * that ConversationID. When the answer was lost (a retry refused as a duplicate), the run asks
 * the provider instead; only runs started before it asked, or one no status answer settled
 * for the whole wait, take the one ConversationID the early results name (the
 * residual risk there: a forger holding the URL's token whose result comes first is believed).
 */
export function assessPayoutResult(
  payout: PendingPayout,
  result: PayoutResultFacts,
): Assessment & { awaitsAnswer: boolean } {
  const problems: string[] = [];
  if (result.originatorConversationId !== payout.id) problems.push('another OriginatorConversationID');
  if (payout.conversationId === null) problems.push('a result for a payout whose ConversationID is unknown here');
  else if (result.conversationId !== payout.conversationId) problems.push('another ConversationID');
  const payment =
    result.resultCode === '0'
      ? paymentProblems(
          payout.amountMinor,
          payout.phone,
          result.amount,
          result.receiver?.split(' - ')[0],
          result.receipt,
        )
      : undefined;
  problems.push(...(payment ?? []));
  return {
    settles: problems.length === 0,
    problems,
    paymentMatches: payment?.length === 0 && problems.length === 0,
    // Consistent but for the ConversationID not known here yet: the run compares it with its answer's.
    awaitsAnswer: payout.conversationId === null && problems.length === 1,
  };
}

/** What is missing or wrong in a reported payment: amount (whole shillings), phone (any form), receipt (form). */
export function paymentProblems(
  amountMinor: number,
  phone: string,
  amount: unknown,
  givenPhone: string | undefined,
  receipt: string | undefined,
): string[] {
  const problems: string[] = [];
  if (amount === undefined) problems.push('no amount');
  else if (wholeShillings(amount) === undefined || wholeShillings(amount)! * MINOR_PER_SHILLING !== amountMinor)
    problems.push('another amount');
  if (givenPhone === undefined) problems.push('no phone');
  else {
    const normalized = normalizeKenyanMobile(givenPhone);
    if (normalized === undefined) problems.push('a phone in an unknown form');
    else if (normalized !== phone) problems.push('another phone');
  }
  if (receipt === undefined) problems.push('no receipt');
  else if (!RECEIPT.test(receipt)) problems.push('a malformed receipt');
  return problems;
}

import { type PendingPayout, paymentProblems } from './callbacks';

/**
 * What a Transaction Status Result proves about the payout of a send-money
 * (providers/mobile-money/protocol.ts, "Transaction Status"). Like any callback, it is only a
 * trigger until it is checked. It must come to its query's own URL, whose token the caller
 * checks. It must carry the ids the provider answered that query with, which a forger holding the
 * URL cannot know, and it must name our payout. A completed one must also show the amount, the
 * recipient and a well-formed receipt. The module is pure, so the rules can be read in one place
 * (README, "What a callback must show").
 */

/** Result codes meaning the provider does not know the transaction (*assumed*: see the protocol notes). */
export const STATUS_NOT_FOUND_CODES: ReadonlySet<string> = new Set(['2032']);

/** The shapes of the provider's codes and ids we store (its own are far shorter). */
const PROVIDER_CODE = /^[A-Za-z0-9_.-]{1,32}$/;
const PROVIDER_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** TransactionStatus values by what they mean (the provider's FAQ); any other is not understood. */
export const TRANSACTION_STATUSES = {
  completed: new Set(['Completed']),
  failed: new Set(['Cancelled', 'Declined', 'Expired']),
  pending: new Set(['Initiated', 'Authorized', 'Pending Authorized']),
} as const;

/** The query as asked: the provider's answer gave it these ids (null until that answer is recorded). */
export interface AskedQuery {
  conversationId: string | null;
  originatorConversationId: string | null;
}

/** A status Result as read (providers/mobile-money/callbacks.ts parseTransactionStatusResult; protocol.ts, "Transaction Status"). */
export interface SendMoneyStatusFacts {
  /** The query's own outcome: '0' found (see `transaction`); STATUS_NOT_FOUND_CODES; else the query failed. */
  resultCode: string;
  resultDesc: string;
  /** The query's own ids, as its request was answered. */
  queryOriginatorConversationId: string;
  queryConversationId: string;
  /** What the provider reports of the transaction asked about (ResultParameters), when any. */
  transaction?: {
    status?: string;
    originatorConversationId?: string;
    conversationId?: string;
    receipt?: string;
    /** As sent (text or a number): checked here. */
    amount?: string | number;
    /** `2547... - Name`. */
    creditParty?: string;
    /** `YYYYMMDDHHmmss`, Nairobi time, when well-formed. */
    finalisedTime?: string;
    /** A declined transaction's own result code and description (*assumed* keys). */
    reasonCode?: string;
    reason?: string;
  };
}

/** What the provider says of the payout, once the Result is checked. */
export type SendMoneyStatusVerdict =
  | { kind: 'completed'; receipt: string; conversationId?: string }
  | { kind: 'failed'; resultCode?: string; resultDesc?: string; conversationId?: string }
  | { kind: 'pending'; status: string }
  | { kind: 'not_found' }
  /** The query itself failed (its initiator, the operator...): nothing is known of the payout. */
  | { kind: 'query_failed' };

export interface SendMoneyStatusAssessment {
  verdict: SendMoneyStatusVerdict;
  /** Why it may not be acted on (recorded with it); empty when it may. */
  problems: string[];
  /** Its query's answer is not recorded yet, so its ids cannot be checked: the run asks again. */
  early: boolean;
}

export function assessSendMoneyStatus(
  payout: PendingPayout,
  query: AskedQuery,
  result: SendMoneyStatusFacts,
): SendMoneyStatusAssessment {
  const problems: string[] = [];
  const early = query.conversationId === null;
  if (early) problems.push('before its query was answered');
  else if (
    result.queryConversationId !== query.conversationId ||
    result.queryOriginatorConversationId !== query.originatorConversationId
  )
    problems.push('the ids of another query');
  const verdict = verdictOf(result);
  const t = result.transaction;
  if (verdict.kind !== 'not_found' && verdict.kind !== 'query_failed') {
    if (t?.originatorConversationId === undefined) problems.push('no OriginatorConversationID');
    else if (t.originatorConversationId !== payout.id) problems.push('another OriginatorConversationID');
    if (payout.conversationId !== null && t?.conversationId !== undefined && t.conversationId !== payout.conversationId)
      problems.push('another ConversationID');
  }
  if (verdict.kind === 'not_found' && t !== undefined) problems.push('"not found" with details of a transaction');
  if (verdict.kind === 'failed') {
    // Success's code or a receipt on a failure contradicts it: never a release on its word.
    if (verdict.resultCode === '0') problems.push('a failure with the code of success');
    if (t?.receipt !== undefined) problems.push('a failure with a receipt');
    if (verdict.resultCode !== undefined && !PROVIDER_CODE.test(verdict.resultCode))
      problems.push('a malformed reason code');
  }
  // A ConversationID adopted from the answer (the payout's own was lost) is stored: it must look like one.
  if (t?.conversationId !== undefined && !PROVIDER_ID.test(t.conversationId))
    problems.push('a malformed ConversationID');
  if (verdict.kind === 'completed')
    problems.push(
      ...paymentProblems(payout.amountMinor, payout.phone, t?.amount, t?.creditParty?.split(' - ')[0], t?.receipt),
    );
  if (result.resultCode === '0' && verdict.kind === 'query_failed')
    problems.push(t?.status === undefined ? 'no TransactionStatus' : 'a TransactionStatus not understood');
  return { verdict, problems, early };
}

function verdictOf(result: SendMoneyStatusFacts): SendMoneyStatusVerdict {
  if (STATUS_NOT_FOUND_CODES.has(result.resultCode)) return { kind: 'not_found' };
  const t = result.transaction;
  if (result.resultCode !== '0' || t?.status === undefined) return { kind: 'query_failed' };
  const ids = t.conversationId === undefined ? {} : { conversationId: t.conversationId };
  if (TRANSACTION_STATUSES.completed.has(t.status)) return { kind: 'completed', receipt: t.receipt ?? '', ...ids };
  if (TRANSACTION_STATUSES.failed.has(t.status))
    return {
      kind: 'failed',
      ...(t.reasonCode !== undefined && { resultCode: t.reasonCode }),
      ...(t.reason !== undefined && { resultDesc: t.reason }),
      ...ids,
    };
  if (TRANSACTION_STATUSES.pending.has(t.status)) return { kind: 'pending', status: t.status };
  return { kind: 'query_failed' };
}

import { defineSignal } from '@temporalio/workflow';

/** Messages of the stk-push and send-money workflows, importable by the API without their bodies. */

export interface StkPushInput {
  transactionId: string;
  /** How long to wait for the callback before asking the provider. */
  callbackWaitMs: number;
  /** Then: how often to ask, and for how long before giving the push up (FAILED, NO_RESULT). */
  queryIntervalMs: number;
  queryDeadlineMs: number;
}

/** A push prompt's result, from a checked callback or from a status query. */
export interface StkResult {
  source: 'callback' | 'query';
  checkoutRequestId: string;
  /** '0' is paid; anything else is a refusal (stringified: the provider sometimes sends strings). */
  resultCode: string;
  resultDesc: string;
  receipt?: string;
  /** When the provider says the money moved (callback TransactionDate), ISO 8601. */
  transactionDate?: string;
}

export interface SendMoneyInput {
  transactionId: string;
  /** How long to wait for the B2C result or queue timeout. */
  resultWaitMs: number;
}

/** A B2C result or queue timeout, as the callback route hands it over. */
export interface B2cOutcome {
  kind: 'result' | 'timeout';
  resultCode: string;
  resultDesc: string;
  conversationId?: string;
  receipt?: string;
  completedAt?: string;
}

export interface MoneyMovementResult {
  status: 'POSTED' | 'FAILED';
  failureReason?: string;
}

export const stkResultSignal = defineSignal<[StkResult]>('stkResult');
export const b2cOutcomeSignal = defineSignal<[B2cOutcome]>('b2cOutcome');

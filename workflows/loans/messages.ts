import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PenaltyTerms } from '../../domain/loans/allocation';
import type { OfferTerms } from '../../domain/loans/terms';

/**
 * Messages of the loan-application (offer) and loan workflows, importable by the API and the
 * activities without the workflow bodies.
 */
export interface LoanOfferInput {
  organizationId: string;
  applicationId: string;
  /** The offer's own limits, so the acceptance validator answers without I/O. */
  loanAmount: number;
  terms: OfferTerms;
  expiresAt: string;
  /** The length of a schedule day for the loan's own workflow (a day in production; seconds in tests). */
  dayMs: number;
}

/** What the borrower takes: an amount within the offer, an allowed tenure, enough collateral. */
export interface OfferAcceptance {
  loanAmount: number;
  tenure: number;
  collateralAmount: number;
}

/** A taken offer's loan (made, perhaps not yet disbursed): what the run needs to pay it out and start its run. */
export interface TakenLoan {
  loanId: string;
  accountId: string;
  userId: string;
  installments: { position: number; dueDay: number }[];
}

/** The Update's refusals (the API maps them to its errors). */
export const LoanOfferError = {
  EXPIRED: 'OFFER_EXPIRED',
  TAKEN: 'OFFER_TAKEN',
  INVALID_TERMS: 'INVALID_TERMS',
  INSUFFICIENT_FUNDS: 'INSUFFICIENT_FUNDS',
  /** As many acceptances already wait for the one being decided as the run lets wait: try again shortly. */
  BUSY: 'OFFER_BUSY',
} as const;

/** Takes the offer: hold, loan, schedule, disbursement; answers the loan's id once it is disbursed. */
export const acceptOfferUpdate = defineUpdate<{ loanId: string }, [OfferAcceptance]>('acceptOffer');
export const offerStateQuery = defineQuery<'OPEN' | 'ACCEPTING' | 'ACCEPTED' | 'EXPIRED'>('offerState');

export interface LoanInput {
  organizationId: string;
  loanId: string;
  /** Schedule day 0, in epoch ms: the disbursement instant rounded down to a whole day. */
  anchorMs: number;
  dayMs: number;
  /** Each installment's due date as days after the start date. */
  installments: { position: number; dueDay: number }[];
  /** The offer's penalty terms (runs started before penalties read them when they need them). */
  penalty?: PenaltyTerms;
  /**
   * Where a continued run picks up: the index of the next installment and the step it awaits,
   * then (every installment fallen due) the next penalty period.
   */
  next?: { index: number; step: 'DUE' | 'OVERDUE'; penalty?: number };
}

/** A servicing step applied elsewhere touched this loan (another cycle's repayment, a waiver): the run checks whether it is repaid. */
export const paymentAppliedSignal = defineSignal('paymentApplied');
/** A POSTED push on the loan's credit account, for this run to allocate (the stk-push run sends it). */
export const repaymentSignal = defineSignal<[Repayment]>('repayment');
export interface Repayment {
  transactionId: string;
  /** When the push was posted (the stk-push run's clock): penalties due before it are charged first. */
  postedAtMs?: number;
}
export const loanStateQuery = defineQuery<{
  closed: boolean;
  next?: { position: number; step: string };
  penalty?: number;
}>('loanState');

/** An operator reverses a repayment that paid this loan: offsetting allocation records, never an update. */
export interface ReversalRequest {
  reversalId: string;
  resourceId: string;
  repaymentId: string;
  reason: string;
  by: string;
}
/** An operator forgives part of the loan's penalties and interest. */
export interface WaiverRequest {
  waiverId: string;
  resourceId: string;
  amount: number;
  reason: string;
  by: string;
}
export const reverseRepaymentUpdate = defineUpdate<{ eventId: string }, [ReversalRequest]>('reverseRepayment');
export const waiveUpdate = defineUpdate<{ eventId: string }, [WaiverRequest]>('waive');

/** The servicing Updates' refusals (the API maps them to its errors). */
export const LoanServicingError = {
  NOT_FOUND: 'NOT_FOUND',
  LOAN_CLOSED: 'LOAN_CLOSED',
  OVER_WAIVABLE: 'OVER_WAIVABLE',
  NOTHING_ALLOCATED: 'NOTHING_ALLOCATED',
  INVALID: 'INVALID',
} as const;

export interface RepaymentReconciliationInput {
  /** Pushes posted more recently are left to the loan's run (its hand-over may be in flight). */
  graceMs: number;
  /** How far back to look. */
  lookbackMs: number;
}

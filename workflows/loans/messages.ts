import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
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

/** The Update's refusals (the API maps them to its errors). */
export const LoanOfferError = {
  EXPIRED: 'OFFER_EXPIRED',
  TAKEN: 'OFFER_TAKEN',
  INVALID_TERMS: 'INVALID_TERMS',
  INSUFFICIENT_FUNDS: 'INSUFFICIENT_FUNDS',
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
  /** Where a continued run picks up: the index of the next installment and the step it awaits. */
  next?: { index: number; step: 'DUE' | 'OVERDUE' };
}

/** Part 2's repayments arrive here: the run checks whether the loan is repaid. */
export const paymentAppliedSignal = defineSignal('paymentApplied');
export const loanStateQuery = defineQuery<{ closed: boolean; next?: { position: number; step: string } }>('loanState');

/**
 * A lending product's terms and the rules an offer is made and taken by (pure; workflows and
 * the API both import it). Money is integer minor units.
 */
export type PeriodUnit = 'DAYS' | 'WEEKS';

/** The terms of an offer: a copy of the product's at the moment the offer was made. */
export interface OfferTerms {
  productType: 'FLAT_RATE' | 'REVOLVING_CREDIT';
  interest: { basisPoints: number; periodValue: number; periodUnit: PeriodUnit };
  standardInterest: { basisPoints: number; periodValue: number; periodUnit: PeriodUnit };
  minAmount: number;
  maxAmount: number;
  tenureUnit: PeriodUnit;
  tenures: number[];
  collateralBasisPoints: number;
  penalty: {
    rateBasisPoints: number;
    calculationBasis: string;
    type: string;
    periodDays: number;
    trigger: string;
    gracePeriodDays: number;
    maxChargeDays: number;
  };
  /** REVOLVING_CREDIT: the credit line's limit; each draw is a cycle of its own. */
  creditLimit?: number;
}

/** Loan application statuses: APPROVED (an offer) → ACCEPTED → DISBURSED, or EXPIRED, or CANCELLED. */
export const LoanApplicationStatus = {
  APPROVED: 'APPROVED',
  ACCEPTED: 'ACCEPTED',
  DISBURSED: 'DISBURSED',
  EXPIRED: 'EXPIRED',
  CANCELLED: 'CANCELLED',
} as const;
export type LoanApplicationStatus = (typeof LoanApplicationStatus)[keyof typeof LoanApplicationStatus];

/** Loan statuses: PENDING_DISBURSEMENT → ACTIVE → REPAID (WRITTEN_OFF is an operator's, later). */
export const LoanStatus = {
  PENDING_DISBURSEMENT: 'PENDING_DISBURSEMENT',
  ACTIVE: 'ACTIVE',
  REPAID: 'REPAID',
  WRITTEN_OFF: 'WRITTEN_OFF',
} as const;
export type LoanStatus = (typeof LoanStatus)[keyof typeof LoanStatus];

/** Installment statuses: UPCOMING → DUE (on its due date) → OVERDUE (the day after, unpaid); PAID once paid in full. */
export const InstallmentStatus = { UPCOMING: 'UPCOMING', DUE: 'DUE', OVERDUE: 'OVERDUE', PAID: 'PAID' } as const;
export type InstallmentStatus = (typeof InstallmentStatus)[keyof typeof InstallmentStatus];

const periodDays = (value: number, unit: PeriodUnit) => value * (unit === 'WEEKS' ? 7 : 1);

/** A rate as basis points per week (rounded half up): what the partner-a and apply shapes show. */
export function weeklyBasisPoints(rate: OfferTerms['interest']): number {
  const days = periodDays(rate.periodValue, rate.periodUnit);
  return Math.floor((rate.basisPoints * 7 * 2 + days) / (2 * days));
}

/**
 * How much a borrower may take: the product's first-loan limit, raised by its step for every
 * loan repaid in full without arrears, never above the product's maximum.
 */
export function borrowingLimit(
  product: { firstLoanLimit: number; limitStep: number; maxAmount: number },
  repaidLoans: number,
): number {
  return Math.min(product.maxAmount, product.firstLoanLimit + repaidLoans * product.limitStep);
}

/** The collateral a loan of `amount` needs: the product's percentage, rounded up to a whole minor unit. */
export function requiredCollateral(amount: number, collateralBasisPoints: number): number {
  return Number((BigInt(amount) * BigInt(collateralBasisPoints) + 9_999n) / 10_000n);
}

/** Why taking an offer on these terms is refused, or undefined when it may be taken. */
export function acceptanceProblem(
  offer: { loanAmount: number; terms: OfferTerms },
  taken: { loanAmount: number; tenure: number; collateralAmount: number },
): { path: string; reason: string } | undefined {
  const { terms } = offer;
  const max = Math.min(offer.loanAmount, terms.maxAmount);
  if (!Number.isSafeInteger(taken.loanAmount) || taken.loanAmount < terms.minAmount || taken.loanAmount > max)
    return { path: 'body.loan_amount', reason: `The loan amount must be between ${terms.minAmount} and ${max}` };
  if (!terms.tenures.includes(taken.tenure))
    return {
      path: 'body.tenure',
      reason: `The tenure must be one of ${terms.tenures.join(', ')} ${terms.tenureUnit.toLowerCase()}`,
    };
  const needed = requiredCollateral(taken.loanAmount, terms.collateralBasisPoints);
  // At most the loan amount: more would freeze the borrower's money for nothing.
  if (
    !Number.isSafeInteger(taken.collateralAmount) ||
    taken.collateralAmount < needed ||
    taken.collateralAmount > Math.max(needed, taken.loanAmount)
  )
    return {
      path: 'body.collateral_amount',
      reason: `The collateral must be between ${needed} (${terms.collateralBasisPoints / 100}% of the loan amount) and the loan amount`,
    };
  return undefined;
}

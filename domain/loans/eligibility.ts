/**
 * Whether a borrower may take an offer now (pure: the acceptance reads the facts under the
 * borrower's lock and asks these). The steps go in the acceptance's order, so that what it reads
 * next (the credit line's available credit, the product's limits) is read only when still needed.
 */
import { borrowingLimit } from './terms';

/** Why an acceptance is refused: a reason code and its readable detail. */
export interface Refusal {
  reason: string;
  detail: string;
}

/** What eligibility is decided on (the facts the acceptance reads in one round trip). */
export interface BorrowerStanding {
  userStatus: string | null;
  kycApproved: boolean;
  loansInArrears: number;
  loansRunning: number;
  /** Running loans that are not revolving-credit draws. */
  termLoansRunning: number;
}

/** Another loan of the borrower still running: also what the database's unique index answers. */
export const LOAN_RUNNING: Readonly<Refusal> = {
  reason: 'LOAN_RUNNING',
  detail: 'A loan of the borrower is not repaid yet',
};

/**
 * The refusal the borrower's standing alone gives, before any limit: not an active user, KYC not
 * approved, a loan in arrears, or another loan running (for a revolving draw, another term loan:
 * draws on a line run side by side).
 */
export function standingRefusal(facts: BorrowerStanding, revolving: boolean): Refusal | undefined {
  if (facts.userStatus !== 'ACTIVE') return { reason: 'NOT_ELIGIBLE', detail: 'The borrower is not an active user' };
  if (!facts.kycApproved)
    return { reason: 'KYC_NOT_APPROVED', detail: "The borrower's identity verification is not approved" };
  if (facts.loansInArrears > 0)
    return { reason: 'IN_ARREARS', detail: 'A loan of the borrower has an overdue installment' };
  if (revolving ? facts.termLoansRunning > 0 : facts.loansRunning > 0) return { ...LOAN_RUNNING };
  return undefined;
}

/** A revolving draw must fit the line's available credit. */
export function drawRefusal(amount: number, available: number): Refusal | undefined {
  if (amount > available) return { reason: 'OVER_LIMIT', detail: `Above the available credit of ${available}` };
  return undefined;
}

/** A term loan must fit the borrower's limit on the product, which grows with the loans repaid. */
export function limitRefusal(
  amount: number,
  product: { firstLoanLimit: number; limitStep: number; maxAmount: number },
  loansRepaid: number,
): Refusal | undefined {
  const limit = borrowingLimit(product, loansRepaid);
  if (amount > limit) return { reason: 'OVER_LIMIT', detail: `Above the borrower's limit of ${limit}` };
  return undefined;
}

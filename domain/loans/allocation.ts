/**
 * How a repayment or a waiver is spread over what a lending account owes (pure: the activities
 * and the tests import it). Money is integer minor units.
 *
 * The transaction processing strategy is PENALTIES_INTEREST_PRINCIPAL_OLDEST_FIRST: installments
 * are paid one at a time, the oldest due date first (across every open cycle of the account, the
 * older cycle first on the same date, then by position), and within an installment its penalties
 * (the allocation's `arrears_amount`), then its interest, then its principal. What is left once
 * everything owed is paid is the overpayment: the caller credits it to the borrower's current
 * account, never drops it. A waiver uses the same order but forgives penalties and interest only.
 */
import type { OfferTerms } from './terms';

export const ALLOCATION_STRATEGY = 'PENALTIES_INTEREST_PRINCIPAL_OLDEST_FIRST';

/** What one installment still owes. */
export interface Obligation {
  installmentId: string;
  loanId: string;
  position: number;
  /** `YYYY-MM-DD`. */
  dueDate: string;
  /** Orders installments of different cycles due the same day: the older cycle first. */
  cycleOrder: number;
  penalties: number;
  interest: number;
  principal: number;
}

export interface Allocation {
  installmentId: string;
  loanId: string;
  position: number;
  arrears: number;
  interest: number;
  principal: number;
  allocated: number;
  /** Whether the installment owes nothing afterwards. */
  settles: boolean;
}

export interface AllocationResult {
  allocations: Allocation[];
  allocated: number;
  /** The part of the amount nothing was owed for. */
  overpayment: number;
}

const isAmount = (value: number) => Number.isSafeInteger(value) && value >= 0;

/** The strategy's installment order. */
export function inOrder(obligations: readonly Obligation[]): Obligation[] {
  return [...obligations].sort(
    (a, b) =>
      (a.dueDate < b.dueDate ? -1 : a.dueDate > b.dueDate ? 1 : 0) ||
      a.cycleOrder - b.cycleOrder ||
      a.position - b.position,
  );
}

/**
 * Spreads `amount` over `obligations` by the strategy. `components` limits what may be paid (a
 * waiver passes penalties and interest). Throws a RangeError on amounts that are not
 * non-negative safe integers.
 */
export function allocate(
  amount: number,
  obligations: readonly Obligation[],
  components: readonly ('penalties' | 'interest' | 'principal')[] = ['penalties', 'interest', 'principal'],
): AllocationResult {
  if (!isAmount(amount)) throw new RangeError('the amount must be a non-negative safe integer');
  for (const owed of obligations)
    for (const value of [owed.penalties, owed.interest, owed.principal])
      if (!isAmount(value)) throw new RangeError(`installment ${owed.installmentId} owes an invalid amount`);
  let left = amount;
  const allocations: Allocation[] = [];
  for (const owed of inOrder(obligations)) {
    if (left === 0) break;
    const take = (due: number, component: 'penalties' | 'interest' | 'principal') => {
      if (!components.includes(component)) return 0;
      const paid = Math.min(due, left);
      left -= paid;
      return paid;
    };
    const arrears = take(owed.penalties, 'penalties');
    const interest = take(owed.interest, 'interest');
    const principal = take(owed.principal, 'principal');
    const allocated = arrears + interest + principal;
    if (allocated === 0) continue;
    allocations.push({
      installmentId: owed.installmentId,
      loanId: owed.loanId,
      position: owed.position,
      arrears,
      interest,
      principal,
      allocated,
      settles: allocated === owed.penalties + owed.interest + owed.principal,
    });
  }
  return { allocations, allocated: amount - left, overpayment: left };
}

/** The product's penalty terms (spec 2, penalty_terms), as an offer copies them. */
export type PenaltyTerms = OfferTerms['penalty'];

/**
 * The days, after the loan's last due date, on which penalty charges fall: AFTER_LOAN_END plus
 * grace_period_days for the first (period 0), then every period_days (RECURRING) while fewer
 * than max_charge_days have passed since the first (and at most MAX_PENALTY_CHARGES). Terms this
 * service does not apply (another trigger, type or basis, a zero rate) charge nothing.
 */
export function penaltyDays(terms: PenaltyTerms): number[] {
  if (
    terms.trigger !== 'AFTER_LOAN_END' ||
    terms.type !== 'RECURRING' ||
    terms.calculationBasis !== 'PRINCIPAL_AND_ARREARS' ||
    !(terms.rateBasisPoints > 0) ||
    !Number.isSafeInteger(terms.periodDays) ||
    terms.periodDays <= 0 ||
    !Number.isSafeInteger(terms.gracePeriodDays) ||
    terms.gracePeriodDays < 0 ||
    !Number.isSafeInteger(terms.maxChargeDays) ||
    terms.maxChargeDays <= 0
  )
    return [];
  const days: number[] = [];
  for (let offset = 0; offset < terms.maxChargeDays && days.length < MAX_PENALTY_CHARGES; offset += terms.periodDays)
    days.push(terms.gracePeriodDays + offset);
  return days;
}

/** A bound on one loan's charges whatever a product says (ten years of daily charges). */
export const MAX_PENALTY_CHARGES = 3_650;

/** One charge: rate_basis_points of the basis, rounded half up to a whole minor unit. */
export function penaltyAmount(basis: number, rateBasisPoints: number): number {
  if (!isAmount(basis) || !isAmount(rateBasisPoints)) throw new RangeError('basis and rate must be non-negative');
  return Number((BigInt(basis) * BigInt(rateBasisPoints) * 2n + 10_000n) / 20_000n);
}

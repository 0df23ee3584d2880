/**
 * The decisions of the servicing steps (pure: db/loans/servicing.ts and db/loans/penalties.ts read
 * and write, these decide): the order of an account's cycles, what a repayment leaves repaid, what
 * offsets a reversal, what an allocation record says it did, and what a penalty charge is.
 */
import { type Allocation, type Obligation, penaltyAmount, type PenaltyTerms } from './allocation';

/** An account's open cycles (its loans), the oldest first, the lower id first on the same instant. */
export function cyclesOldestFirst(installments: readonly { loanId: string; loanCreatedAt: Date }[]): string[] {
  return [...new Set(installments.map((r) => r.loanId))].sort((a, b) => {
    const at = (id: string) => installments.find((r) => r.loanId === id)!.loanCreatedAt.getTime();
    return at(a) - at(b) || (a < b ? -1 : 1);
  });
}

const isNothingOwed = (o: Obligation) => o.penalties + o.interest + o.principal === 0;

/**
 * The loans a repayment touched, and those of them repaid: a loan is repaid when every
 * installment it had open is settled now (or owed nothing already).
 */
export function repaymentEffect(
  obligations: readonly Obligation[],
  allocations: readonly Allocation[],
): { loanIds: string[]; repaid: string[] } {
  const loanIds = [...new Set(allocations.map((a) => a.loanId))];
  const settled = new Set(allocations.filter((a) => a.settles).map((a) => a.installmentId));
  const repaid = loanIds.filter((loanId) =>
    obligations.every((o) => o.loanId !== loanId || settled.has(o.installmentId) || isNothingOwed(o)),
  );
  return { loanIds, repaid };
}

/** The records that offset a repayment's allocations (each amount negated), and the total they take back. */
export function reversalOf(
  paid: readonly Pick<Allocation, 'installmentId' | 'loanId' | 'position' | 'principal' | 'interest' | 'arrears'>[],
): { offsets: Allocation[]; total: number } {
  const offsets: Allocation[] = paid.map((a) => {
    const principal = -a.principal;
    const interest = -a.interest;
    const arrears = -a.arrears;
    return {
      installmentId: a.installmentId,
      loanId: a.loanId,
      position: a.position,
      principal,
      interest,
      arrears,
      allocated: principal + interest + arrears,
      settles: false,
    };
  });
  const total = -offsets.reduce((sum, a) => sum + a.allocated, 0);
  return { offsets, total };
}

/** What an allocation record says it did to its installment, by the step that wrote it. */
export function allocationEffect(
  source: 'LIVE' | 'REVERSAL' | 'WAIVER',
  settles: boolean,
): 'REVERSED' | 'WAIVED' | 'OBLIGATION_SETTLED' | 'PARTIALLY_SETTLED' {
  return source === 'REVERSAL'
    ? 'REVERSED'
    : source === 'WAIVER'
      ? 'WAIVED'
      : settles
        ? 'OBLIGATION_SETTLED'
        : 'PARTIALLY_SETTLED';
}

/**
 * One period's penalty charge on what was outstanding at its due time (never below zero): the
 * loan's rate (none without terms) of that basis.
 */
export function penaltyCharge(
  outstanding: number,
  terms: PenaltyTerms | undefined,
): { basis: number; rateBasisPoints: number; amount: number } {
  const basis = Math.max(0, outstanding);
  const rateBasisPoints = terms?.rateBasisPoints ?? 0;
  return { basis, rateBasisPoints, amount: penaltyAmount(basis, rateBasisPoints) };
}

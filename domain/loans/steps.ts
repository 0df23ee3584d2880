/**
 * A loan's steps in time (pure: the loan's run and the activities import it). The run wakes on
 * each installment's due day and marks it DUE, the day after and marks it OVERDUE, then charges
 * one penalty per period; days are `dayMs` long from the anchor, the disbursement instant rounded
 * down to a whole day. Each step taken leaves its trace in Postgres (the installment's
 * `schedule_status`, the period's charge row), so whether a run has fallen behind its own clock
 * can be told from Postgres alone.
 */
import { type PenaltyTerms, penaltyDays } from './allocation';

/** Schedule day 0 of a loan disbursed at `disbursedAtMs`. */
export function loanAnchorMs(disbursedAtMs: number, dayMs: number): number {
  return Math.floor(disbursedAtMs / dayMs) * dayMs;
}

/** What Postgres shows of a loan's steps. */
export interface LoanSteps {
  anchorMs: number;
  dayMs: number;
  /** In position order: each installment's due day and the last step the run took on it. */
  installments: { dueDay: number; scheduleStatus: 'UPCOMING' | 'DUE' | 'OVERDUE' }[];
  penalty: PenaltyTerms | undefined;
  /** Penalty periods charged so far (the run charges them in order). */
  charged: number;
}

/**
 * When the first step the run has not taken yet falls due (undefined: none is left). A run whose
 * next step is at or before an instant has not caught up with that instant: what happened then
 * must wait for it, in time order.
 */
export function nextStepAtMs(loan: LoanSteps): number | undefined {
  const at = (day: number) => loan.anchorMs + day * loan.dayMs;
  for (const installment of loan.installments) {
    if (installment.scheduleStatus === 'UPCOMING') return at(installment.dueDay);
    if (installment.scheduleStatus === 'DUE') return at(installment.dueDay + 1);
  }
  const days = loan.penalty ? penaltyDays(loan.penalty) : [];
  const lastDueDay = loan.installments.at(-1)?.dueDay ?? 0;
  return loan.charged < days.length ? at(lastDueDay + days[loan.charged]!) : undefined;
}

/**
 * Whether every loan's run has taken each step due by `atMs`, Postgres knowing each one's clock
 * (null: it does not). What was posted at `atMs` may then be applied at once, in time order.
 */
export function stepsTakenBy(loans: (LoanSteps | null)[], atMs: number): boolean {
  return loans.every((loan) => loan !== null && (nextStepAtMs(loan) ?? Number.POSITIVE_INFINITY) > atMs);
}

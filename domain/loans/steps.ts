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
  loanId: string;
  /** Null when Postgres does not know it (the offer was made before offers kept their day length). */
  clock: { anchorMs: number; dayMs: number } | null;
  /** In position order: each installment's due day and the last step the run took on it. */
  installments: { dueDay: number; scheduleStatus: 'UPCOMING' | 'DUE' | 'OVERDUE' }[];
  penalty: PenaltyTerms | undefined;
  /** Penalty periods charged so far (the run charges them in order). */
  charged: number;
}

/**
 * When the first step the run has not taken yet falls due (undefined: none is left; minus infinity
 * when the clock is unknown, as if it were due already). A run whose next step is at or before an
 * instant has not caught up with that instant: what happened then must wait for it, in time order.
 */
export function nextStepAtMs(loan: LoanSteps): number | undefined {
  const { clock } = loan;
  if (!clock) return Number.NEGATIVE_INFINITY;
  const at = (day: number) => clock.anchorMs + day * clock.dayMs;
  for (const installment of loan.installments) {
    if (installment.scheduleStatus === 'UPCOMING') return at(installment.dueDay);
    if (installment.scheduleStatus === 'DUE') return at(installment.dueDay + 1);
  }
  const days = loan.penalty ? penaltyDays(loan.penalty) : [];
  const lastDueDay = loan.installments.at(-1)?.dueDay ?? 0;
  return loan.charged < days.length ? at(lastDueDay + days[loan.charged]!) : undefined;
}

/**
 * The loan whose run has not taken every step due by `atMs`: of several, the one whose next step
 * falls due first (a loan whose clock is unknown before any). Undefined when every run has caught
 * up with `atMs`: what was posted then may be applied at once, in time order.
 */
export function runBehind(loans: LoanSteps[], atMs: number): string | undefined {
  let behind: { loanId: string; at: number } | undefined;
  for (const loan of loans) {
    const at = nextStepAtMs(loan) ?? Number.POSITIVE_INFINITY;
    if (at <= atMs && (!behind || at < behind.at)) behind = { loanId: loan.loanId, at };
  }
  return behind?.loanId;
}

import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { LoanActivities } from '../../activities';
import { type LoanInput, loanStateQuery, paymentAppliedSignal } from './messages';

const activities = proxyActivities<LoanActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/**
 * A loan's life (`loan/<loan id>`): it wakes on each installment's due date and marks it DUE,
 * wakes the day after and marks it OVERDUE if anything is still outstanding, and closes the loan
 * (REPAID, collateral released) once everything is paid; repayments (part 2) signal
 * paymentApplied. Days are `dayMs` long from `anchorMs` (a calendar day in production). Over a
 * long tenure it continues as new when Temporal suggests, carrying where it stands.
 */
export async function loan(input: LoanInput): Promise<string> {
  const ref = { organizationId: input.organizationId, loanId: input.loanId };
  let closed = false;
  let payments = 0;
  /** The payment count the last repaid check started from: a payment during a check is not lost. */
  let checked = 0;
  let index = input.next?.index ?? 0;
  let step: 'DUE' | 'OVERDUE' = input.next?.step ?? 'DUE';
  setHandler(paymentAppliedSignal, () => {
    payments += 1;
  });
  setHandler(loanStateQuery, () => {
    const installment = input.installments[index];
    return { closed, next: installment && { position: installment.position, step } };
  });

  const checkClosed = async () => {
    checked = payments;
    closed = await activities.closeLoanIfRepaid(ref);
  };
  /** A long life continues as new; a payment that came during the last check is checked first, never dropped. */
  const continueAsNewIfSuggested = async () => {
    if (closed || !workflowInfo().continueAsNewSuggested) return;
    while (!closed && payments !== checked) await checkClosed();
    if (!closed) await continueAsNew<typeof loan>({ ...input, next: { index, step } });
  };

  while (!closed && index < input.installments.length) {
    const installment = input.installments[index]!;
    const at = input.anchorMs + (installment.dueDay + (step === 'OVERDUE' ? 1 : 0)) * input.dayMs;
    // A payment wakes the run early to see whether the loan is repaid.
    if (await condition(() => payments !== checked, Math.max(0, at - Date.now()))) {
      await checkClosed();
      await continueAsNewIfSuggested();
      continue;
    }
    const status = await activities.advanceInstallment({ ...ref, position: installment.position, to: step });
    if (step === 'DUE' && status !== 'PAID') step = 'OVERDUE';
    else {
      index += 1;
      step = 'DUE';
    }
    await checkClosed();
    await continueAsNewIfSuggested();
  }
  // Every installment has fallen due: the run waits for the payments that repay the loan.
  while (!closed) {
    await condition(() => payments !== checked);
    await checkClosed();
    await continueAsNewIfSuggested();
  }
  return 'REPAID';
}

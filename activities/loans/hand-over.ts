import { WorkflowNotFoundError } from '@temporalio/client';
import { applyRepayment } from '../../db/loans/servicing';
import { repaymentTarget } from '../../db/loans/servicing-reads';
import { workflowIds } from '../../workflows/ids';
import { paymentAppliedSignal, repaymentSignal } from '../../workflows/loans/messages';
import type { Needs } from '../deps';

/** How often a hand-over tries the target loan's run before allocating the repayment itself. */
const HANDOVER_ATTEMPTS = 5;

/** A posted repayment push: its organization, id, and when it was posted (the run's order). */
export interface RepaymentRef {
  organizationId: string;
  transactionId: string;
  postedAtMs: number;
}

/**
 * How a posted repayment reaches the loans it pays, for the loans area's hand-over step and for
 * the stk-push settle step that hands over in the same local activity (one activation fewer).
 */
export function repaymentHandOver({ db, clock, temporal }: Needs<'db' | 'clock' | 'temporal'>) {
  /** Tells a loan's run that a step elsewhere repaid it (it closes the loan); a closed run needs nothing. */
  const tellRepaid = async (loanIds: string[]) => {
    for (const loanId of loanIds)
      await temporal.workflow
        .getHandle(workflowIds.loan(loanId))
        .signal(paymentAppliedSignal)
        .catch((error: unknown) => {
          if (!(error instanceof WorkflowNotFoundError)) throw error;
        });
  };

  /**
   * Hands the push to the run of the account's oldest open loan (`loan/<id>`, signal
   * `repayment`), which allocates it. A run that closed in between refuses the signal and the
   * next loan is chosen; with no open loan (or one that keeps closing under it) the push is
   * allocated here and the loans it repaid are told. Run again, it hands over again: the run
   * takes a push once, and its allocation is unique per push.
   */
  const handOver = async (ref: RepaymentRef): Promise<{ handedTo: string | null }> => {
    for (let attempt = 0; attempt < HANDOVER_ATTEMPTS; attempt++) {
      const loanId = await repaymentTarget(db, ref.organizationId, ref.transactionId);
      if (!loanId) break;
      try {
        await temporal.workflow
          .getHandle(workflowIds.loan(loanId))
          .signal(repaymentSignal, { transactionId: ref.transactionId, postedAtMs: ref.postedAtMs });
        return { handedTo: loanId };
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    const applied = await applyRepayment(
      db,
      ref.organizationId,
      { transactionId: ref.transactionId, loanId: null },
      clock.now(),
    );
    if (applied.outcome === 'applied') await tellRepaid(applied.repaid);
    return { handedTo: null };
  };

  return { handOver, tellRepaid };
}

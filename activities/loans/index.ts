import { randomUUID } from 'node:crypto';
import { expireOffer, findLoanApplication } from '../../db/loans/applications';
import { acceptOffer } from '../../db/loans/acceptance';
import { advanceInstallment, closeIfRepaid, disburseLoan, installmentDueDays } from '../../db/loans/loans';
import { chargePenalty, penaltyTermsOf } from '../../db/loans/penalties';
import { applyRepayment, reverseRepayment, waive } from '../../db/loans/servicing';
import { repaymentTarget, unallocatedRepayments } from '../../db/loans/servicing-reads';
import { flatRateSchedule } from '../../domain/loans/schedule';
import { WorkflowNotFoundError } from '@temporalio/client';
import { workflowIds } from '../../workflows/ids';
import {
  paymentAppliedSignal,
  repaymentSignal,
  type ReversalRequest,
  type TakenLoan,
  type WaiverRequest,
} from '../../workflows/loans/messages';

/** How often a hand-over tries the target loan's run before allocating the repayment itself. */
const HANDOVER_ATTEMPTS = 5;
import type { Needs } from '../deps';

/** Which application or loan an activity works on; everything else is read from Postgres. */
interface ApplicationRef {
  organizationId: string;
  applicationId: string;
}
interface LoanRef {
  organizationId: string;
  loanId: string;
}

/** The loans area's activities: each one database transaction, safe to run twice. */
export function createLoanActivities(deps: Needs<'db' | 'clock' | 'temporal'>) {
  const { db, clock, temporal } = deps;
  /** What the run needs to pay out a taken offer's loan and start its run. */
  const takenLoan = async (
    organizationId: string,
    loan: { id: string; account_id: string; user_id: string },
  ): Promise<TakenLoan> => ({
    loanId: loan.id,
    accountId: loan.account_id,
    userId: loan.user_id,
    installments: await installmentDueDays(db, organizationId, loan.id),
  });
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
  return {
    /**
     * Takes the offer: the schedule is priced on the offer's terms from today, then the loan,
     * its installments and the collateral hold are written together. A retry finds the loan the
     * first attempt made (the loan id is the application's once accepted).
     */
    async acceptLoanOffer(
      ref: ApplicationRef & { loanAmount: number; tenure: number; collateralAmount: number; acceptedBy: string },
    ): Promise<
      | ({ outcome: 'accepted' } & TakenLoan)
      | { outcome: 'insufficient_funds'; available: number }
      | { outcome: 'not_eligible'; reason: string; detail: string }
      | { outcome: 'not_open'; status: string }
    > {
      const application = await findLoanApplication(db, ref.organizationId, ref.applicationId);
      if (!application) throw new Error(`no loan application ${ref.applicationId}`);
      const now = clock.now();
      const startDate = now.toISOString().slice(0, 10);
      const schedule = flatRateSchedule({
        principal: ref.loanAmount,
        rate: application.terms.interest,
        tenure: { duration: ref.tenure, unit: application.tenure_unit },
        startDate,
      });
      const accepted = await acceptOffer(
        db,
        ref.organizationId,
        ref.applicationId,
        {
          loanId: application.loan_id ?? randomUUID(),
          loanAmount: ref.loanAmount,
          interest: schedule.totalInterest,
          tenure: ref.tenure,
          collateralAmount: ref.collateralAmount,
          startDate,
          installments: schedule.installments,
          acceptedBy: ref.acceptedBy,
        },
        now,
      );
      if (accepted.outcome === 'insufficient_funds' || accepted.outcome === 'not_eligible') return accepted;
      if (accepted.outcome === 'not_open') return { outcome: 'not_open', status: accepted.application.status };
      return { outcome: 'accepted', ...(await takenLoan(ref.organizationId, accepted.loan)) };
    },

    /** Pays the principal to the borrower's current account (once). */
    async disburseLoan(ref: LoanRef): Promise<{ disbursedAtMs: number }> {
      const loan = await disburseLoan(db, ref.organizationId, ref.loanId, clock.now());
      return { disbursedAtMs: (loan.disbursed_at ?? clock.now()).getTime() };
    },

    /** Expires an offer nobody took; answers its status then (EXPIRED, or ACCEPTED/DISBURSED when taken first). */
    async expireLoanOffer(ref: ApplicationRef): Promise<string> {
      return (await expireOffer(db, ref.organizationId, ref.applicationId, clock.now())) ?? 'EXPIRED';
    },

    /**
     * Closes the offer at its expiry: one nobody took expires (or stays CANCELLED); one taken
     * answers the loan its acceptance made and the acceptance's id, for the run to finish it (the
     * acceptance may be one whose Update died before the run recorded it).
     */
    async closeLoanOffer(
      ref: ApplicationRef,
    ): Promise<{ outcome: 'closed'; status: string } | ({ outcome: 'taken'; acceptedBy: string } & TakenLoan)> {
      await expireOffer(db, ref.organizationId, ref.applicationId, clock.now());
      const application = await findLoanApplication(db, ref.organizationId, ref.applicationId);
      if (!application) throw new Error(`no loan application ${ref.applicationId}`);
      // An acceptance writes the loan id with ACCEPTED, in its one transaction.
      if (!application.loan_id) return { outcome: 'closed', status: application.status };
      return {
        outcome: 'taken',
        acceptedBy: application.accepted_by ?? '',
        // The loan is the application's: same credit account, same borrower.
        ...(await takenLoan(ref.organizationId, { ...application, id: application.loan_id })),
      };
    },

    advanceInstallment(ref: LoanRef & { position: number; to: 'DUE' | 'OVERDUE' }) {
      return advanceInstallment(db, ref.organizationId, ref.loanId, ref.position, ref.to, clock.now());
    },

    closeLoanIfRepaid(ref: LoanRef): Promise<boolean> {
      return closeIfRepaid(db, ref.organizationId, ref.loanId, clock.now());
    },

    /**
     * A posted push on a credit account is a repayment. When the runs of the account's loans have
     * taken every step due by its posting (the usual case), it is allocated here at once and the
     * loans it repaid are told. Otherwise a run is behind its clock (its worker was down) and
     * takes it, after those steps: it is handed to that loan's run (`loan/<id>`, signal
     * `repayment` with the posting instant from Postgres), or, that run gone, to the run of the
     * account's oldest open loan. A run that closed in between refuses the signal and the next
     * loan is chosen; with no open loan (or one that keeps closing under it) the push is allocated
     * here. Run again, it does it again: a run takes a push once, and its allocation is unique per
     * push.
     */
    async handOverRepayment(ref: { organizationId: string; transactionId: string }) {
      const atOnce = await applyRepayment(
        db,
        ref.organizationId,
        { transactionId: ref.transactionId, loanId: null, inTimeOnly: true },
        clock.now(),
      );
      if (atOnce.outcome === 'applied') await tellRepaid(atOnce.repaid);
      if (atOnce.outcome !== 'behind') return { handedTo: null };
      for (let attempt = 0; attempt < HANDOVER_ATTEMPTS; attempt++) {
        const loanId = attempt === 0 ? atOnce.loanId : await repaymentTarget(db, ref.organizationId, ref.transactionId);
        if (!loanId) break;
        try {
          await temporal.workflow
            .getHandle(workflowIds.loan(loanId))
            .signal(repaymentSignal, { transactionId: ref.transactionId, postedAtMs: atOnce.postedAtMs });
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
    },

    /** Allocates a posted push on a credit account to what the account owes (once per push). */
    applyRepayment(ref: { organizationId: string; loanId: string | null; transactionId: string }) {
      return applyRepayment(
        db,
        ref.organizationId,
        { transactionId: ref.transactionId, loanId: ref.loanId },
        clock.now(),
      );
    },

    reverseRepayment(ref: LoanRef & ReversalRequest) {
      return reverseRepayment(db, ref.organizationId, ref, clock.now());
    },

    waive(ref: LoanRef & WaiverRequest) {
      return waive(db, ref.organizationId, ref, clock.now());
    },

    loanPenaltyTerms(ref: LoanRef) {
      return penaltyTermsOf(db, ref.organizationId, ref.loanId);
    },

    /** Posted credit-account pushes never allocated, posted between `lookbackMs` and `graceMs` ago (at most `limit`). */
    unallocatedRepayments(input: { graceMs: number; lookbackMs: number; limit: number }) {
      const now = clock.now().getTime();
      return unallocatedRepayments(
        db,
        { from: new Date(now - input.lookbackMs), to: new Date(now - input.graceMs) },
        input.limit,
      );
    },

    /** One period's penalty charge (once per loan and period), on what was owed at `dueAtMs`. */
    chargePenalty(ref: LoanRef & { chargeId: string; period: number; dueAtMs: number }) {
      return chargePenalty(
        db,
        ref.organizationId,
        { chargeId: ref.chargeId, loanId: ref.loanId, period: ref.period, dueAt: new Date(ref.dueAtMs) },
        clock.now(),
      );
    },
  };
}

import { randomUUID } from 'node:crypto';
import { expireOffer, findLoanApplication } from '../../db/loans/applications';
import { acceptOffer, advanceInstallment, closeIfRepaid, disburseLoan, installmentDueDays } from '../../db/loans/loans';
import { flatRateSchedule } from '../../domain/loans/schedule';
import type { ActivityDeps } from '../index';

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
export function createLoanActivities(deps: ActivityDeps) {
  const { db, clock } = deps;
  return {
    /**
     * Takes the offer: the schedule is priced on the offer's terms from today, then the loan,
     * its installments and the collateral hold are written together. A retry finds the loan the
     * first attempt made (the loan id is the application's once accepted).
     */
    async acceptLoanOffer(
      ref: ApplicationRef & { loanAmount: number; tenure: number; collateralAmount: number; acceptedBy: string },
    ): Promise<
      | {
          outcome: 'accepted';
          loanId: string;
          accountId: string;
          userId: string;
          installments: { position: number; dueDay: number }[];
        }
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
      const { loan } = accepted;
      return {
        outcome: 'accepted',
        loanId: loan.id,
        accountId: loan.account_id,
        userId: loan.user_id,
        installments: await installmentDueDays(db, ref.organizationId, loan.id),
      };
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

    advanceInstallment(ref: LoanRef & { position: number; to: 'DUE' | 'OVERDUE' }) {
      return advanceInstallment(db, ref.organizationId, ref.loanId, ref.position, ref.to, clock.now());
    },

    closeLoanIfRepaid(ref: LoanRef): Promise<boolean> {
      return closeIfRepaid(db, ref.organizationId, ref.loanId, clock.now());
    },
  };
}

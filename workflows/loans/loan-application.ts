import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  currentUpdateInfo,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { LoanActivities } from '../../activities';
import { acceptanceProblem } from '../../domain/loans/terms';
import { workflowIds } from '../ids';
import { AccountId, ApplicationId, OrganizationId, UserId } from '../search-attributes';
import { acceptOfferUpdate, type LoanOfferInput, LoanOfferError, offerStateQuery } from './messages';
import { loan } from './loan';

const activities = proxyActivities<LoanActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
/** The acceptance's two money steps run as local activities: the borrower waits on them. */
const steps = proxyLocalActivities<LoanActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Changes made while runs may be in flight; each branch keeps older histories replaying. */
const PATCHES = {
  /** The acceptance's steps as local activities (they were activities). */
  localSteps: 'loan-apply-local-steps',
} as const;

/**
 * An offer's life (`loan-application/<id>`): open until `expiresAt`, when it expires by itself
 * (EXPIRED), unless the borrower takes it first through the acceptOffer Update. The Update's
 * validator refuses, before anything is recorded, an expired or taken offer and terms outside
 * the offer; its handler holds the collateral and makes the loan and its schedule (one step),
 * disburses the principal (one step), and starts the loan's own workflow. Every step is
 * idempotent in Postgres, so a crash or a retried Update moves no money twice.
 */
export async function loanApplication(input: LoanOfferInput): Promise<string> {
  const ref = { organizationId: input.organizationId, applicationId: input.applicationId };
  let state: 'OPEN' | 'ACCEPTING' | 'ACCEPTED' | 'EXPIRED' = 'OPEN';
  let loanId: string | undefined;

  setHandler(offerStateQuery, () => state);
  setHandler(
    acceptOfferUpdate,
    async (taken) => {
      if (state === 'ACCEPTED' && loanId) return { loanId };
      state = 'ACCEPTING';
      const run = patched(PATCHES.localSteps) ? steps : activities;
      const accepted = await run.acceptLoanOffer({
        loanAmount: taken.loanAmount,
        tenure: taken.tenure,
        collateralAmount: taken.collateralAmount,
        // The Update's id: a retried request (the same Idempotency-Key) finds the loan it made.
        acceptedBy: currentUpdateInfo()?.id ?? '',
        ...ref,
      });
      if (accepted.outcome === 'insufficient_funds' || accepted.outcome === 'not_eligible') {
        state = 'OPEN';
        throw accepted.outcome === 'insufficient_funds'
          ? ApplicationFailure.nonRetryable(
              `The current account's available balance (${accepted.available}) is short of the collateral`,
              LoanOfferError.INSUFFICIENT_FUNDS,
            )
          : ApplicationFailure.nonRetryable(accepted.detail, accepted.reason);
      }
      if (accepted.outcome === 'not_open') {
        const wasTaken = accepted.status === 'ACCEPTED' || accepted.status === 'DISBURSED';
        state = wasTaken ? 'ACCEPTED' : 'EXPIRED';
        throw ApplicationFailure.nonRetryable(
          `The offer is ${accepted.status}`,
          wasTaken ? LoanOfferError.TAKEN : LoanOfferError.EXPIRED,
        );
      }
      const disbursed = await run.disburseLoan({
        organizationId: input.organizationId,
        loanId: accepted.loanId,
      });
      await startChild(loan, {
        workflowId: workflowIds.loan(accepted.loanId),
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: [
          { key: OrganizationId, value: input.organizationId },
          { key: AccountId, value: accepted.accountId },
          { key: ApplicationId, value: input.applicationId },
          { key: UserId, value: accepted.userId },
        ],
        args: [
          {
            organizationId: input.organizationId,
            loanId: accepted.loanId,
            anchorMs: Math.floor(disbursed.disbursedAtMs / input.dayMs) * input.dayMs,
            dayMs: input.dayMs,
            installments: accepted.installments,
            penalty: input.terms.penalty,
          },
        ],
      });
      loanId = accepted.loanId;
      state = 'ACCEPTED';
      return { loanId: accepted.loanId };
    },
    {
      validator: (taken) => {
        // Exactly the three terms: nothing else rides along into the activity.
        if (Object.keys(taken).sort().join() !== 'collateralAmount,loanAmount,tenure')
          throw ApplicationFailure.nonRetryable('Unexpected acceptance fields', LoanOfferError.INVALID_TERMS);
        if (state === 'EXPIRED' || Date.now() >= Date.parse(input.expiresAt))
          throw ApplicationFailure.nonRetryable('The offer has expired', LoanOfferError.EXPIRED);
        if (state === 'ACCEPTING' || state === 'ACCEPTED')
          throw ApplicationFailure.nonRetryable('The offer has been taken already', LoanOfferError.TAKEN);
        const problem = acceptanceProblem({ loanAmount: input.loanAmount, terms: input.terms }, taken);
        if (problem) throw ApplicationFailure.nonRetryable(problem.reason, LoanOfferError.INVALID_TERMS, problem);
      },
    },
  );

  const remaining = () => Math.max(0, Date.parse(input.expiresAt) - Date.now());
  for (;;) {
    if (!(await condition(() => state !== 'OPEN', remaining()))) {
      state = 'EXPIRED';
      // Taken in Postgres by an acceptance this run cannot have missed: the expiry changes nothing then.
      const status = await activities.expireLoanOffer(ref);
      if (status === 'ACCEPTED' || status === 'DISBURSED') state = 'ACCEPTED';
      break;
    }
    await condition(() => state !== 'ACCEPTING');
    if (state !== 'OPEN') break; // taken (or found expired); a refused acceptance leaves the offer open
  }
  await condition(allHandlersFinished);
  return state;
}

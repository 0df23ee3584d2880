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
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/common';
import type { LoanActivities } from '../../activities';
import { acceptanceProblem } from '../../domain/loans/terms';
import { loanAnchorMs } from '../../domain/loans/steps';
import { workflowIds } from '../ids';
import { AccountId, ApplicationId, OrganizationId, UserId } from '../search-attributes';
import { acceptOfferUpdate, type LoanOfferInput, LoanOfferError, offerStateQuery, type TakenLoan } from './messages';
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
  /** At its expiry the run finishes an acceptance it finds in Postgres (it used to end there, undisbursed). */
  finishFoundAcceptance: 'loan-apply-finish-found-acceptance',
  /**
   * An acceptance that finds the offer taken by one this run never recorded makes the run finish
   * that one at once (the run used to end ACCEPTED with it undisbursed, its collateral held).
   */
  finishUnrecordedAtOnce: 'loan-apply-finish-unrecorded-at-once',
} as const;

type Steps = typeof activities;

/** Acceptances that may wait for the one being decided; more are refused OFFER_BUSY (503). */
const MAX_WAITING = 4;

/** The offer, as the offerState query answers it. */
type OfferState = 'OPEN' | 'ACCEPTING' | 'ACCEPTED' | 'EXPIRED';

/**
 * An offer's life (`loan-application/<id>`): open until `expiresAt`, unless the borrower takes it
 * first through the acceptOffer Update. The Update's validator refuses, before anything is
 * recorded, an expired or taken offer and terms outside the offer; its handler holds the
 * collateral and makes the loan and its schedule (one step), disburses the principal (one step),
 * and starts the loan's own workflow. Every step is idempotent in Postgres, so a crash or a
 * retried Update moves no money twice. At `expiresAt` the run closes the offer (`closeOffer`):
 * EXPIRED when nobody took it, else it finishes the acceptance Postgres holds. An Update arriving
 * past `expiresAt` takes nothing: it waits for the close, and answers the loan only when the close
 * finished that very acceptance (the same Update sent again, its first delivery lost).
 */
export async function loanApplication(input: LoanOfferInput): Promise<string> {
  const ref = { organizationId: input.organizationId, applicationId: input.applicationId };
  const expiresMs = Date.parse(input.expiresAt);
  let state: OfferState = 'OPEN';
  /** Acceptances waiting for the one being decided (ACCEPTING). */
  let waiting = 0;
  let loanId: string | undefined;
  /** From the offer's close on, the close decides what became of it: Updates wait for `closed`. */
  let closing = false;
  /** What the close found: the acceptance it finished (and whose it was), or nothing taken (null). */
  let closed: { loanId: string; acceptedBy: string } | null | undefined;
  /**
   * Postgres holds an acceptance this run never recorded: the workflow task whose local activity
   * made it was lost with its worker, and done again with another acceptance first. The run
   * closes the offer now, which finishes that acceptance, as it would at the offer's time.
   */
  let takenUnrecorded = false;

  /** An acceptance's steps after its first: the principal paid out, the loan's own run started. */
  async function finish(run: Steps, taken: TakenLoan, options: { resumed: boolean }): Promise<void> {
    const disbursed = await run.disburseLoan({ organizationId: input.organizationId, loanId: taken.loanId });
    const started = startChild(loan, {
      workflowId: workflowIds.loan(taken.loanId),
      parentClosePolicy: ParentClosePolicy.ABANDON,
      // A resumed acceptance's loan may have had a run already (its Update got that far): never a second.
      ...(options.resumed && { workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE }),
      typedSearchAttributes: [
        { key: OrganizationId, value: input.organizationId },
        { key: AccountId, value: taken.accountId },
        { key: ApplicationId, value: input.applicationId },
        { key: UserId, value: taken.userId },
      ],
      args: [
        {
          organizationId: input.organizationId,
          loanId: taken.loanId,
          anchorMs: loanAnchorMs(disbursed.disbursedAtMs, input.dayMs),
          dayMs: input.dayMs,
          installments: taken.installments,
          penalty: input.terms.penalty,
        },
      ],
    });
    await started.catch((error: unknown) => {
      if (!(options.resumed && error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    });
  }

  /**
   * The offer's time is up: untaken, it expires. Taken in Postgres by an acceptance this run never
   * recorded (its Update died with a worker before its first task was saved, and the client never
   * sent it again), that acceptance is finished here, exactly once: the borrower agreed to the
   * terms, was found eligible and had the collateral held, all committed together; what is left
   * is ours (pay the principal into their own current account, start the loan's run), and the
   * same keyed request sent at any time would finish it just so. Undoing it instead would give
   * the borrower an outcome that depends on whether their retry came before the expiry or after
   * (and a made loan has no status to be unmade into), for a loan whose schedule runs from the
   * disbursement anyway: no day is charged for the delay.
   */
  async function closeOffer(): Promise<void> {
    closing = true;
    const found = await activities.closeLoanOffer(ref);
    if (found.outcome === 'closed') {
      state = 'EXPIRED';
      closed = null;
      return;
    }
    state = 'ACCEPTING';
    await finish(activities, found, { resumed: true });
    loanId = found.loanId;
    state = 'ACCEPTED';
    closed = { loanId: found.loanId, acceptedBy: found.acceptedBy };
  }

  setHandler(offerStateQuery, () => state);
  setHandler(
    acceptOfferUpdate,
    async (taken) => {
      // The Update's id: a retried request (the same Idempotency-Key) finds the loan it made.
      const acceptedBy = currentUpdateInfo()?.id ?? '';
      // Another acceptance is being decided: this one waits for its outcome rather than being told
      // the offer was taken (a refused one, a short balance say, leaves the offer open). Several
      // waiting: the first to resume decides next, the others wait again.
      if (state === 'ACCEPTING') {
        waiting += 1;
        try {
          while (state === 'ACCEPTING' && !closing) await condition(() => state !== 'ACCEPTING' || closing);
        } finally {
          waiting -= 1;
        }
        const decided = state as OfferState; // changed by the other acceptance meanwhile
        if (!closing && decided === 'ACCEPTED')
          throw ApplicationFailure.nonRetryable('The offer has been taken already', LoanOfferError.TAKEN);
        if (!closing && decided === 'EXPIRED')
          throw ApplicationFailure.nonRetryable('The offer has expired', LoanOfferError.EXPIRED);
      }
      // Past the offer's time only the close can tell: the loan when it finished this very acceptance.
      if (closing || Date.now() >= expiresMs) {
        await condition(() => closed !== undefined);
        if (closed?.acceptedBy === acceptedBy) return { loanId: closed.loanId };
        throw closed
          ? ApplicationFailure.nonRetryable('The offer has been taken already', LoanOfferError.TAKEN)
          : ApplicationFailure.nonRetryable('The offer has expired', LoanOfferError.EXPIRED);
      }
      if (state === 'ACCEPTED' && loanId) return { loanId };
      state = 'ACCEPTING';
      const run = patched(PATCHES.localSteps) ? steps : activities;
      const accepted = await run.acceptLoanOffer({
        loanAmount: taken.loanAmount,
        tenure: taken.tenure,
        collateralAmount: taken.collateralAmount,
        acceptedBy,
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
        if (wasTaken && patched(PATCHES.finishUnrecordedAtOnce)) {
          // The close decides the offer's state from here (one may be running already).
          if (!closing) state = 'OPEN';
          takenUnrecorded = true;
        } else state = wasTaken ? 'ACCEPTED' : 'EXPIRED';
        throw ApplicationFailure.nonRetryable(
          `The offer is ${accepted.status}`,
          wasTaken ? LoanOfferError.TAKEN : LoanOfferError.EXPIRED,
        );
      }
      await finish(run, accepted, { resumed: false });
      loanId = accepted.loanId;
      state = 'ACCEPTED';
      return { loanId: accepted.loanId };
    },
    {
      validator: (taken) => {
        // Exactly the three terms: nothing else rides along into the activity.
        if (Object.keys(taken).sort().join() !== 'collateralAmount,loanAmount,tenure')
          throw ApplicationFailure.nonRetryable('Unexpected acceptance fields', LoanOfferError.INVALID_TERMS);
        if (state === 'EXPIRED') throw ApplicationFailure.nonRetryable('The offer has expired', LoanOfferError.EXPIRED);
        // One being decided (ACCEPTING) is waited for in the handler: it may yet be refused. A few
        // wait at most: each is an Update in flight, of which Temporal lets a run hold ten.
        if (!closing && state === 'ACCEPTED')
          throw ApplicationFailure.nonRetryable('The offer has been taken already', LoanOfferError.TAKEN);
        if (!closing && state === 'ACCEPTING' && waiting >= MAX_WAITING)
          throw ApplicationFailure.nonRetryable(
            'Other acceptances of this offer are being decided: send it again shortly',
            LoanOfferError.BUSY,
          );
        // Past the offer's time the handler takes nothing: it answers what the close finds, which
        // may be this very acceptance (the same Update again, its first delivery lost).
        if (closing || Date.now() >= expiresMs) return;
        const problem = acceptanceProblem({ loanAmount: input.loanAmount, terms: input.terms }, taken);
        if (problem) throw ApplicationFailure.nonRetryable(problem.reason, LoanOfferError.INVALID_TERMS, problem);
      },
    },
  );

  const remaining = () => Math.max(0, expiresMs - Date.now());
  for (;;) {
    if (!(await condition(() => state !== 'OPEN' || takenUnrecorded, remaining()))) {
      if (patched(PATCHES.finishFoundAcceptance)) {
        await closeOffer();
        break;
      }
      // Before the patch the run ended on an acceptance it found, as if it could not have missed one.
      state = 'EXPIRED';
      const status = await activities.expireLoanOffer(ref);
      if (status === 'ACCEPTED' || status === 'DISBURSED') state = 'ACCEPTED';
      break;
    }
    if (takenUnrecorded) {
      await closeOffer();
      break;
    }
    // Acceptances waiting behind a refused one are decided in turn: ACCEPTING again is no outcome.
    // (The handlers set `state`: read as the declared union, not as narrowed by this function.)
    while ((state as OfferState) === 'ACCEPTING') await condition(() => state !== 'ACCEPTING');
    if (state !== 'OPEN') break; // taken (or found expired); a refused acceptance leaves the offer open
  }
  await condition(allHandlersFinished);
  return state;
}

import type { Client } from '@temporalio/client';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../../config';
import { workflowIds } from '../../workflows/ids';
import type { loanApplication } from '../../workflows/loans/loan-application';
import {
  acceptOfferUpdate,
  type LoanOfferInput,
  LoanOfferError,
  LoanServicingError,
  type OfferAcceptance,
  type ReversalRequest,
  reverseRepaymentUpdate,
  waiveUpdate,
  type WaiverRequest,
} from '../../workflows/loans/messages';
import { AccountId, ApplicationId, OrganizationId, UserId } from '../../workflows/search-attributes';
import { sendUpdate } from '../updates';

/**
 * The one module through which the API drives the loan-application (offer) workflow: start it
 * with the offer, and take the offer through its acceptOffer Update. The run carries the
 * organization, credit account, application and user ids as search attributes.
 */
export function loanWorkflows(temporal: Client, config: Pick<Config, 'LOAN_DAY_LENGTH' | 'TEMPORAL_TASK_QUEUE'>) {
  return {
    /** The length of a schedule day for offers made now (kept with the offer: its run is started with it). */
    dayMs: config.LOAN_DAY_LENGTH,

    /** Starts the offer's run: true when this call started it, false when the offer had one (running or closed). */
    async startOffer(
      offer: Omit<LoanOfferInput, 'dayMs'> & { dayMs: number | undefined; accountId: string; userId: string },
    ): Promise<boolean> {
      const { accountId, userId, dayMs, ...input } = offer;
      try {
        await temporal.workflow.start<typeof loanApplication>('loanApplication', {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          workflowId: workflowIds.loanApplication(offer.applicationId),
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: [
            { key: OrganizationId, value: offer.organizationId },
            { key: AccountId, value: accountId },
            { key: ApplicationId, value: offer.applicationId },
            { key: UserId, value: userId },
          ],
          args: [{ ...input, dayMs: dayMs ?? config.LOAN_DAY_LENGTH }],
        });
        return true;
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        return false;
      }
    },

    /** Whether the offer's workflow is running (an offer without one could not be taken). */
    async offerRunning(applicationId: string): Promise<boolean> {
      try {
        const run = await temporal.workflow.getHandle(workflowIds.loanApplication(applicationId)).describe();
        return run.status.name === 'RUNNING';
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return false;
        throw error;
      }
    },

    /**
     * Takes the offer; the same `updateId` (from the Idempotency-Key) is one acceptance however
     * often it is sent. Answers the refusal's type and details, or the loan id.
     */
    async acceptOffer(
      applicationId: string,
      taken: OfferAcceptance,
      updateId: string,
    ): Promise<{ loanId: string } | { refused: string; message: string; details?: { path: string } }> {
      try {
        return await sendUpdate(() =>
          temporal.workflow
            .getHandle(workflowIds.loanApplication(applicationId))
            .executeUpdate(acceptOfferUpdate, { args: [taken], updateId }),
        );
      } catch (error) {
        // The run is over (expired, or gone): the offer cannot be taken.
        if (error instanceof WorkflowNotFoundError)
          return { refused: LoanOfferError.EXPIRED, message: 'The offer is no longer open' };
        const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
        if (cause instanceof ApplicationFailure && cause.type)
          return { refused: cause.type, message: cause.message, details: cause.details?.[0] as { path: string } };
        throw error;
      }
    },
  };
}

/** A servicing Update's answer: the event it made (or had made), or why it was refused. */
export type ServicingAnswer = { eventId: string } | { refused: string; message: string };

/** Runs a servicing Update on a loan's run; a run that has ended is a closed loan. */
async function servicingUpdate(run: () => Promise<{ eventId: string }>): Promise<ServicingAnswer> {
  try {
    return await sendUpdate(run);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError)
      return { refused: LoanServicingError.LOAN_CLOSED, message: 'The loan is closed' };
    const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type) return { refused: cause.type, message: cause.message };
    throw error;
  }
}

/** Operators' corrections, through the loan's own run (`loan/<id>`), which serialises them with its payments and charges. */
export function loanServicingWorkflows(temporal: Client) {
  const handle = (loanId: string) => temporal.workflow.getHandle(workflowIds.loan(loanId));
  return {
    reverseRepayment: (loanId: string, request: ReversalRequest) =>
      servicingUpdate(() =>
        handle(loanId).executeUpdate(reverseRepaymentUpdate, { args: [request], updateId: request.reversalId }),
      ),
    waive: (loanId: string, request: WaiverRequest) =>
      servicingUpdate(() => handle(loanId).executeUpdate(waiveUpdate, { args: [request], updateId: request.waiverId })),
  };
}
export type LoanServicingWorkflows = ReturnType<typeof loanServicingWorkflows>;

export type LoanWorkflows = ReturnType<typeof loanWorkflows>;

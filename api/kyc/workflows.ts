import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../config';
import { workflowIds } from '../../workflows/ids';
import {
  type KycVerificationInput,
  type ProviderEvent,
  providerCallbackSignal,
  refreshStatusUpdate,
  reportProviderJobIdUpdate,
  type SdkSession,
  sdkSessionUpdate,
  type SweepResult,
  verificationClosedSignal,
} from '../../workflows/kyc/messages';
import type { kycExpirySweep } from '../../workflows/kyc/expiry-sweep';
import type { kycVerification } from '../../workflows/kyc/verification';
import { ApplicationId, OrganizationId, UserId } from '../../workflows/search-attributes';
import { sendUpdate } from '../updates';

/**
 * The one module through which the API drives kyc-verification workflows: start,
 * Update-with-Start, signal and update, with "already started" taken as success.
 */
export function kycWorkflows(temporal: Client, config: Pick<Config, 'KYC_SWEEP_BATCH_SIZE' | 'TEMPORAL_TASK_QUEUE'>) {
  const startOptions = (input: KycVerificationInput, userId: string) => ({
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflowId: workflowIds.kycVerification(input.applicationId),
    args: [input] as [KycVerificationInput],
    // A resubmission after a completed run starts the next one; a run still going is reused.
    workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
    typedSearchAttributes: [
      { key: OrganizationId, value: input.organizationId },
      { key: ApplicationId, value: input.applicationId },
      { key: UserId, value: userId },
    ],
  });
  const handle = (applicationId: string) => temporal.workflow.getHandle(workflowIds.kycVerification(applicationId));

  /**
   * A new submission needs its own run, but the previous run of the application may still be
   * closing (it completed the application a moment ago) or be left over (the sweep settled it).
   * It is asked to close, given a moment, and terminated if it does not; only then does the
   * new run start, so the new submission never lands in a run that is about to end.
   */
  async function closePreviousRun(applicationId: string): Promise<void> {
    const previous = handle(applicationId);
    try {
      if ((await previous.describe()).status.name !== 'RUNNING') return;
      await previous.signal(verificationClosedSignal);
      const closed = await Promise.race([
        previous.result().then(
          () => true,
          () => true,
        ),
        sleep(5_000).then(() => false),
      ]);
      if (!closed) await previous.terminate('superseded by a new submission');
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }

  return {
    async startServerUpload(input: KycVerificationInput, userId: string): Promise<void> {
      await closePreviousRun(input.applicationId);
      try {
        await temporal.workflow.start<typeof kycVerification>('kycVerification', {
          ...startOptions(input, userId),
          workflowIdConflictPolicy: 'FAIL',
        });
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    },

    /** Starts the run if needed and mints its SDK session synchronously (Update-with-Start). */
    async startProviderSdk(input: KycVerificationInput, userId: string): Promise<SdkSession> {
      await closePreviousRun(input.applicationId);
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof kycVerification>('kycVerification', {
        ...startOptions(input, userId),
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      return sendUpdate(() => temporal.workflow.executeUpdateWithStart(sdkSessionUpdate, { startWorkflowOperation }));
    },

    /** Reports the provider's job id; the failure type (DIFFERENT_JOB_ID, NOT_PENDING) is returned as is. */
    async reportProviderJobId(
      applicationId: string,
      providerJobId: string,
    ): Promise<{ ok: true } | { ok: false; reason: string }> {
      try {
        await sendUpdate(() =>
          handle(applicationId).executeUpdate(reportProviderJobIdUpdate, { args: [providerJobId] }),
        );
        return { ok: true };
      } catch (error) {
        if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure)
          return { ok: false, reason: error.cause.type ?? 'REFUSED' };
        if (error instanceof WorkflowNotFoundError) return { ok: false, reason: 'NOT_PENDING' };
        throw error;
      }
    },

    /** Asks the running verification to consult the provider now; false when no run takes it. */
    async refreshStatus(applicationId: string): Promise<boolean> {
      try {
        await sendUpdate(() => handle(applicationId).executeUpdate(refreshStatusUpdate));
        return true;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError || error instanceof WorkflowUpdateFailedError) return false;
        throw error;
      }
    },

    /**
     * Runs the organization's expiry sweep now, or joins the one already running, and answers
     * its result. The sweep itself decides whether the organization's window is due.
     */
    async runExpirySweep(organizationId: string): Promise<SweepResult> {
      const run = await temporal.workflow.start<typeof kycExpirySweep>('kycExpirySweep', {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowId: workflowIds.kycExpirySweep(organizationId),
        args: [{ organizationId, batchSize: config.KYC_SWEEP_BATCH_SIZE }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        typedSearchAttributes: [{ key: OrganizationId, value: organizationId }],
      });
      return run.result();
    },

    /** Hands a verified callback to the application's run; a run that has ended ignores it. */
    async deliverCallback(applicationId: string, event: ProviderEvent): Promise<boolean> {
      try {
        await handle(applicationId).signal(providerCallbackSignal, event);
        return true;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return false;
        throw error;
      }
    },
  };
}
export type KycWorkflows = ReturnType<typeof kycWorkflows>;

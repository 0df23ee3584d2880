import { type Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import type { Config } from '../config';
import { workflowIds } from '../workflows/ids';
import {
  type KycVerificationInput,
  type ProviderEvent,
  providerCallbackSignal,
  refreshStatusUpdate,
  reportProviderJobIdUpdate,
  type SdkSession,
  sdkSessionUpdate,
} from '../workflows/kyc-messages';
import { ApplicationId, OrganizationId, UserId } from '../workflows/search-attributes';

/**
 * The one module through which the API drives kyc-verification workflows: start,
 * Update-with-Start, signal and update, with "already started" taken as success.
 */
export function kycWorkflows(temporal: Client, config: Config) {
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

  return {
    async startServerUpload(input: KycVerificationInput, userId: string): Promise<void> {
      try {
        await temporal.workflow.start('kycVerification', { ...startOptions(input, userId), workflowIdConflictPolicy: 'FAIL' });
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    },

    /** Starts the run if needed and mints its SDK session synchronously (Update-with-Start). */
    async startProviderSdk(input: KycVerificationInput, userId: string): Promise<SdkSession> {
      const startWorkflowOperation = new WithStartWorkflowOperation('kycVerification', {
        ...startOptions(input, userId),
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      return temporal.workflow.executeUpdateWithStart(sdkSessionUpdate, { startWorkflowOperation });
    },

    /** Reports the provider's job id; the failure type (DIFFERENT_JOB_ID, NOT_PENDING) is returned as is. */
    async reportProviderJobId(applicationId: string, providerJobId: string): Promise<{ ok: true } | { ok: false; reason: string }> {
      try {
        await handle(applicationId).executeUpdate(reportProviderJobIdUpdate, { args: [providerJobId] });
        return { ok: true };
      } catch (error) {
        if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) return { ok: false, reason: error.cause.type ?? 'REFUSED' };
        if (error instanceof WorkflowNotFoundError) return { ok: false, reason: 'NOT_PENDING' };
        throw error;
      }
    },

    /** Asks the running verification to consult the provider now; false when no run takes it. */
    async refreshStatus(applicationId: string): Promise<boolean> {
      try {
        await handle(applicationId).executeUpdate(refreshStatusUpdate);
        return true;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError || error instanceof WorkflowUpdateFailedError) return false;
        throw error;
      }
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

import type { Client } from '@temporalio/client';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../../config';
import { workflowIds } from '../../workflows/ids';
import type { accountActivation } from '../../workflows/current-account/activation';
import type { emailVerification } from '../../workflows/current-account/email-verification';
import {
  authorizeOtpUpdate,
  confirmEmailUpdate,
  confirmOtpUpdate,
  type OtpAnswer,
  type OtpLimits,
  OtpRefusal,
  resendOtpUpdate,
} from '../../workflows/current-account/messages';
import type { phoneChange } from '../../workflows/current-account/phone-change';
import { OrganizationId, UserId } from '../../workflows/search-attributes';
import { sendUpdate } from '../updates';

/** An Update refused by its validator (or a run that has ended): the refusal's type and message. */
export interface Refused {
  refused: string;
  message: string;
  retryAfterMs?: number;
}

/** Runs an Update; a refusal (validator or a closed run) is an answer, anything else is thrown. */
async function update<T>(run: () => Promise<T>): Promise<T | Refused> {
  try {
    return await sendUpdate(run);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { refused: OtpRefusal.NOT_AWAITED, message: 'It has ended' };
    const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type) {
      const details = cause.details?.[0] as { retryAfterMs?: number } | undefined;
      return { refused: cause.type, message: cause.message, retryAfterMs: details?.retryAfterMs };
    }
    throw error;
  }
}

/**
 * The one module through which the API drives the self-service workflows: starts them, and sends
 * the digests of submitted codes and tokens through their Updates (never a code).
 */
export function selfServiceWorkflows(
  temporal: Client,
  config: Pick<
    Config,
    | 'ACTIVATION_TTL'
    | 'BANK_DECISION_DEADLINE'
    | 'BANK_STATUS_POLL_INTERVAL'
    | 'EMAIL_VERIFICATION_TTL'
    | 'OTP_MAX_ATTEMPTS'
    | 'OTP_RESEND_COOLDOWN'
    | 'OTP_TTL'
    | 'PHONE_CHANGE_TTL'
    | 'TEMPORAL_TASK_QUEUE'
  >,
) {
  const otp: OtpLimits = {
    ttlMs: config.OTP_TTL,
    maxAttempts: config.OTP_MAX_ATTEMPTS,
    resendCooldownMs: config.OTP_RESEND_COOLDOWN,
  };
  const bank = { intervalMs: config.BANK_STATUS_POLL_INTERVAL, deadlineMs: config.BANK_DECISION_DEADLINE };
  const options = (workflowId: string, organizationId: string, userId: string) => ({
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflowId,
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    typedSearchAttributes: [
      { key: OrganizationId, value: organizationId },
      { key: UserId, value: userId },
    ],
  });
  /** A start retried after a lost answer finds the run already there. */
  const started = async (start: () => Promise<unknown>) => {
    try {
      await start();
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  };
  const handle = (workflowId: string) => temporal.workflow.getHandle(workflowId);

  return {
    startActivation: (ids: { activationId: string; organizationId: string; userId: string }) =>
      started(() =>
        temporal.workflow.start<typeof accountActivation>('accountActivation', {
          ...options(workflowIds.accountActivation(ids.activationId), ids.organizationId, ids.userId),
          args: [{ ...ids, otp, ttlMs: config.ACTIVATION_TTL, bank }],
        }),
      ),
    startEmailVerification: (ids: { verificationId: string; organizationId: string; userId: string }) =>
      started(() =>
        temporal.workflow.start<typeof emailVerification>('emailVerification', {
          ...options(workflowIds.emailVerification(ids.verificationId), ids.organizationId, ids.userId),
          args: [{ ...ids, ttlMs: config.EMAIL_VERIFICATION_TTL, maxAttempts: config.OTP_MAX_ATTEMPTS }],
        }),
      ),
    startPhoneChange: (ids: { changeId: string; organizationId: string; userId: string }) =>
      started(() =>
        temporal.workflow.start<typeof phoneChange>('phoneChange', {
          ...options(workflowIds.phoneChange(ids.changeId), ids.organizationId, ids.userId),
          args: [{ ...ids, otp, stepTtlMs: config.PHONE_CHANGE_TTL, bank }],
        }),
      ),

    confirmActivation: (activationId: string, digest: string, updateId?: string): Promise<OtpAnswer | Refused> =>
      update(() =>
        handle(workflowIds.accountActivation(activationId)).executeUpdate(confirmOtpUpdate, {
          args: [{ digest }],
          updateId,
        }),
      ),
    resendActivationCode: (activationId: string): Promise<{ sentAtMs: number } | Refused> =>
      update(() => handle(workflowIds.accountActivation(activationId)).executeUpdate(resendOtpUpdate)),
    confirmEmail: (verificationId: string, digest: string, updateId?: string): Promise<OtpAnswer | Refused> =>
      update(() =>
        handle(workflowIds.emailVerification(verificationId)).executeUpdate(confirmEmailUpdate, {
          args: [{ digest }],
          updateId,
        }),
      ),
    authorizePhoneChange: (changeId: string, digest: string, updateId?: string): Promise<OtpAnswer | Refused> =>
      update(() =>
        handle(workflowIds.phoneChange(changeId)).executeUpdate(authorizeOtpUpdate, { args: [{ digest }], updateId }),
      ),
    confirmPhoneChange: (changeId: string, digest: string, updateId?: string): Promise<OtpAnswer | Refused> =>
      update(() =>
        handle(workflowIds.phoneChange(changeId)).executeUpdate(confirmOtpUpdate, { args: [{ digest }], updateId }),
      ),
  };
}
export type SelfServiceWorkflows = ReturnType<typeof selfServiceWorkflows>;

import { defineQuery, defineUpdate } from '@temporalio/workflow';

/**
 * Messages of the current-account self-service workflows (activation, e-mail verification,
 * mobile-number change), importable by the API without their bodies. Codes and link tokens never
 * travel: the API sends the digest of what the caller typed (domain/current-account/codes.ts).
 */

export interface OtpLimits {
  /** How long a code can be used after it was sent. */
  ttlMs: number;
  /** Wrong codes allowed per code; the next wrong one rejects the run's activation or change. */
  maxAttempts: number;
  /** How soon after a code another may be sent. */
  resendCooldownMs: number;
}

export interface BankPolling {
  /** How often the bank is asked about a decision it has not made yet. */
  intervalMs: number;
  /** And for how long, before the run gives up (REJECTED, BANK_NO_DECISION). */
  deadlineMs: number;
}

export interface ActivationInput {
  activationId: string;
  organizationId: string;
  userId: string;
  otp: OtpLimits;
  /** How long the run waits for its code to be confirmed (resends included). */
  ttlMs: number;
  bank: BankPolling;
}

export interface EmailVerificationInput {
  verificationId: string;
  organizationId: string;
  userId: string;
  /** How long the e-mailed link can be used. */
  ttlMs: number;
  /** Wrong tokens allowed before the verification FAILS. */
  maxAttempts: number;
}

export interface PhoneChangeInput {
  changeId: string;
  organizationId: string;
  userId: string;
  otp: OtpLimits;
  /** How long the run waits for each of its two codes. */
  stepTtlMs: number;
  bank: BankPolling;
}

/** What a submitted code did. A wrong one counts: LOCKED is the attempt that used the last one up. */
export type OtpAnswer =
  { outcome: 'ACCEPTED' } | { outcome: 'WRONG_CODE'; attemptsLeft: number } | { outcome: 'LOCKED' };

/** Failure types the self-service workflows act on. */
export const SelfServiceFailure = {
  /** The code or link could not be sent and retrying will not help (a refused number or address). */
  NOT_SENT: 'NOT_SENT',
  /** Over the hourly limits of codes sent (details[0]: `{ retryAfterMs }`). */
  SEND_LIMIT: 'SEND_LIMIT',
  /** The provider is not configured: the run cannot go on. */
  NOT_CONFIGURED: 'NOT_CONFIGURED',
} as const;

/**
 * A bank decision as the workflows see it: a refusal is an answer, not an error. `reference` is
 * the bank reference the decision is under when it is not the run's own id (an earlier
 * activation's onboarding, adopted).
 */
export type BankDecision = { reference?: string } & (
  | { status: 'DONE'; customerId?: string; accountNumber?: string }
  | { status: 'PENDING' }
  | { status: 'REFUSED'; code: string }
);

/** Why a submission or a resend was refused before it was looked at (the Update's validator): the failure's type. */
export const OtpRefusal = {
  /** Not a digest: the API sends 64 hex digits. */
  MALFORMED: 'MALFORMED',
  /** The run is not waiting for this code (not sent yet, already used, or the run has moved on or ended). */
  NOT_AWAITED: 'NOT_AWAITED',
  /** The code is past its lifetime: ask for another. */
  EXPIRED: 'EXPIRED',
  /** A resend within the cool-down; details[0] is `{ retryAfterMs }`. */
  COOLDOWN: 'COOLDOWN',
} as const;

/** Activation: the code sent by SMS (ACCEPTED moves it to ONBOARDING). */
export const confirmOtpUpdate = defineUpdate<OtpAnswer, [{ digest: string }]>('confirmOtp');
/** Mobile-number change: the owner's authorization code (to the old mobile or the verified e-mail). */
export const authorizeOtpUpdate = defineUpdate<OtpAnswer, [{ digest: string }]>('authorizeOtp');
/** Another code, the previous one no longer valid: refused within the cool-down. */
export const resendOtpUpdate = defineUpdate<{ sentAtMs: number }, []>('resendOtp');
/** E-mail verification: the link's token digest. */
export const confirmEmailUpdate = defineUpdate<OtpAnswer, [{ digest: string }]>('confirmEmail');

/** Where a run stands, for operators in the Temporal UI. */
export const selfServiceStateQuery = defineQuery<{ status: string; attempts: number; expiresAtMs?: number }>(
  'selfServiceState',
);

import { ApplicationFailure } from '@temporalio/common';
import {
  completeActivation,
  findActivationRecipient,
  recordActivationStatus,
  uncertainOnboardings,
} from '../../db/current-account/activations';
import {
  endEmailVerification,
  findEmailVerificationRecipient,
  markEmailVerified,
  recordLinkSent,
} from '../../db/current-account/email-verifications';
import { claimSend, recordSent } from '../../db/current-account/otp-sends';
import {
  completePhoneChange,
  findPhoneChangeAtBank,
  findPhoneChangeRecipients,
  phoneHeldByAnother,
  recordPhoneChangeStatus,
} from '../../db/current-account/phone-changes';
import { emailConfirmUrl } from '../../domain/current-account/links';
import { type OtpPurpose, otpDigest, tokenDigest } from '../../domain/current-account/codes';
import { newLinkToken, newOtp } from './codes';
import { BankError, type MobileNumberChange, type Onboarding, REFUSALS } from '../../providers/bank/protocol';
import { EmailError } from '../../providers/email/protocol';
import { SmsError } from '../../providers/sms/protocol';
import type { Needs } from '../deps';
import { onboardingRequest } from './onboarding';
import { type BankDecision, SelfServiceFailure } from '../../workflows/current-account/messages';

/**
 * The bank's answers that decide against the customer or the change. Anything else (our
 * credentials refused, NOT_FOUND, a reused key...) is not a decision: the step is retried, and a
 * failing step shows in the Temporal UI for an operator, until the run's bank deadline.
 */
const BANK_REFUSALS = new Set<string>([...Object.keys(REFUSALS), 'VALIDATION_ERROR']);
/** Answers that mean the bank may already hold our submission under this reference: its status read tells. */
const ASK_THE_STATUS = new Set<string>(['IDEMPOTENCY_KEY_REUSED', 'DUPLICATE_REFERENCE']);
const notHeld = (error: unknown) => error instanceof BankError && error.details.code === 'NOT_FOUND';
/** Whether a submission's failure means the bank may hold it: then its status read tells. */
const askTheStatus = (error: unknown) =>
  error instanceof BankError && (error.details.indeterminate || ASK_THE_STATUS.has(error.details.code ?? ''));

/** Submits; when the bank may hold the submission, reads it instead. Holding nothing, the step is retried with the same key. */
async function submitted<T>(submit: () => Promise<T>, status: () => Promise<T>): Promise<T> {
  try {
    return await submit();
  } catch (error) {
    if (!askTheStatus(error)) throw error;
    try {
      return await status();
    } catch (statusError) {
      throw notHeld(statusError) ? error : statusError;
    }
  }
}

const notConfigured = (what: string) =>
  ApplicationFailure.nonRetryable(`${what} is not configured`, SelfServiceFailure.NOT_CONFIGURED);

/** A bank answer or error as a decision; transient and indeterminate errors are thrown (the step is retried). */
function decided<T extends Onboarding | MobileNumberChange>(read: (answer: T) => BankDecision) {
  return async (call: () => Promise<T>): Promise<BankDecision> => {
    try {
      return read(await call());
    } catch (error) {
      const definite = error instanceof BankError && !error.details.transient && !error.details.indeterminate;
      const code = definite ? error.details.code : undefined;
      if (code && BANK_REFUSALS.has(code)) return { status: 'REFUSED', code };
      throw error;
    }
  };
}
const onboardingDecision = decided<Onboarding>((answer) =>
  answer.status === 'ACTIVE'
    ? { status: 'DONE', customerId: answer.bankCustomerId, accountNumber: answer.accountNumber }
    : { status: 'PENDING' },
);
const changeDecision = decided<MobileNumberChange>((answer) =>
  answer.status === 'COMPLETED' ? { status: 'DONE' } : { status: 'PENDING' },
);

/**
 * Steps of the current-account self-service workflows (activation, e-mail verification,
 * mobile-number change): sending codes and links, the bank's onboarding and number change, and
 * the rows that project each run's state. Codes are made here and leave only in the message: the
 * workflow gets their HMAC. Nothing here logs a code, a token, a number or an address.
 */
export function createCurrentAccountActivities(
  deps: Needs<
    'db' | 'providers' | 'clock',
    | 'OTP_HMAC_SECRET'
    | 'OTP_SENDS_PER_HOUR_PER_DESTINATION'
    | 'OTP_SENDS_PER_HOUR_PER_USER'
    | 'OTP_TTL'
    | 'PUBLIC_BASE_URL'
  >,
) {
  const { db, config, providers, clock } = deps;
  /** A provider or key the step needs; without it the run cannot go on (NOT_CONFIGURED, final). */
  function needed<T>(value: T | undefined, what: string): T {
    if (value === undefined) throw notConfigured(what);
    return value;
  }
  const secret = () => needed(config.OTP_HMAC_SECRET, 'OTP_HMAC_SECRET');
  const bank = () => needed(providers.bank, 'The bank');
  const minutes = Math.max(1, Math.round(config.OTP_TTL / 60_000));

  /** Where a code for `purpose` goes, read from the run's own row (no number or address travels in a history). */
  async function destinationOf(
    organizationId: string,
    purpose: OtpPurpose,
    referenceId: string,
  ): Promise<{ userId: string; channel: 'SMS' | 'EMAIL'; to: string }> {
    if (purpose === 'ACTIVATION') {
      const row = await findActivationRecipient(db, organizationId, referenceId);
      if (!row?.phone_number)
        throw ApplicationFailure.nonRetryable('the user has no mobile number', SelfServiceFailure.NOT_SENT);
      return { userId: row.user_id, channel: 'SMS', to: row.phone_number };
    }
    const row = await findPhoneChangeRecipients(db, organizationId, referenceId);
    if (!row) throw ApplicationFailure.nonRetryable('no such phone change', SelfServiceFailure.NOT_SENT);
    if (purpose === 'PHONE_CHANGE_CONFIRMATION')
      return { userId: row.user_id, channel: 'SMS', to: row.new_phone_number };
    return row.authorization_channel === 'EMAIL'
      ? { userId: row.user_id, channel: 'EMAIL', to: row.email }
      : { userId: row.user_id, channel: 'SMS', to: row.old_phone_number };
  }

  const TEXTS: Record<OtpPurpose, string> = {
    ACTIVATION: 'to activate your current account',
    PHONE_CHANGE_AUTHORIZATION: 'to authorize changing your mobile number',
    PHONE_CHANGE_CONFIRMATION: 'to confirm this number as your new mobile number',
  };

  /** A run's progress as its row records it, now; a rejection always with its reason. */
  function transition<S extends string>(input: { status: S | 'REJECTED'; reason?: string }) {
    const at = clock.now();
    return input.status === 'REJECTED'
      ? { status: 'REJECTED' as const, at, reason: input.reason ?? 'REJECTED' }
      : { status: input.status as Exclude<S, 'REJECTED'>, at };
  }

  /** A send claimed within the hourly limits (recorded before it goes out); over them, SEND_LIMIT, final. */
  async function claimOwnSend(send: Parameters<typeof claimSend>[1]): Promise<number> {
    const claim = await claimSend(db, send, {
      perUser: config.OTP_SENDS_PER_HOUR_PER_USER,
      perDestination: config.OTP_SENDS_PER_HOUR_PER_DESTINATION,
    });
    if ('retryAfterMs' in claim)
      throw ApplicationFailure.create({
        type: SelfServiceFailure.SEND_LIMIT,
        message: 'Too many codes sent in the last hour',
        nonRetryable: true,
        details: [{ retryAfterMs: claim.retryAfterMs }],
      });
    return claim.id;
  }

  /**
   * Sends a claimed message and records the provider's id on the claim. A refusal no retry can
   * change stops the run's sending (NOT_SENT); anything else is retried.
   */
  async function deliver(claim: number, send: () => Promise<{ messageId: string }>): Promise<void> {
    let sent: { messageId: string };
    try {
      sent = await send();
    } catch (error) {
      if (
        (error instanceof SmsError || error instanceof EmailError) &&
        !error.details.transient &&
        !error.details.indeterminate
      )
        throw ApplicationFailure.nonRetryable(error.message, SelfServiceFailure.NOT_SENT);
      throw error;
    }
    await recordSent(db, claim, sent.messageId);
  }

  return {
    /**
     * Makes a code for `purpose`, sends it (SMS, or e-mail for an owner authorization by e-mail)
     * and records the send; answers its digest and when it went. Run again, it sends a new code:
     * only the last one returned to the run is valid.
     */
    async sendOtp(input: { organizationId: string; purpose: OtpPurpose; referenceId: string }) {
      const { userId, channel, to } = await destinationOf(input.organizationId, input.purpose, input.referenceId);
      const sentAt = clock.now();
      const claim = await claimOwnSend({
        organizationId: input.organizationId,
        userId,
        purpose: input.purpose,
        referenceId: input.referenceId,
        channel,
        destination: to,
        sentAt,
        // Only a phone change's new number is not the user's own.
        own: input.purpose !== 'PHONE_CHANGE_CONFIRMATION',
      });
      const code = newOtp();
      const digest = otpDigest(secret(), input.purpose, input.referenceId, code);
      const text = `${code} is your code ${TEXTS[input.purpose]}. It expires in ${minutes} minutes. Never share it.`;
      await deliver(claim, () =>
        channel === 'SMS'
          ? needed(providers.sms, 'The SMS gateway').send({ to, message: text })
          : needed(providers.email, 'E-mail').send({ to, subject: 'Your verification code', text }),
      );
      return { digest, sentAtMs: sentAt.getTime() };
    },

    async recordActivation(input: {
      organizationId: string;
      activationId: string;
      status: 'AWAITING_OTP' | 'ONBOARDING' | 'REJECTED';
      reason?: string;
    }) {
      await recordActivationStatus(db, input.organizationId, input.activationId, transition(input));
    },

    /**
     * Opens the account at the bank with the user's KYC subject, under our activation id as the
     * bank's reference. An earlier activation of the account whose bank outcome stayed unknown
     * (BANK_UNAVAILABLE, BANK_NO_DECISION) is asked about first, and adopted when the bank opened
     * or is opening it: one bank customer per account, whatever was retried or started again.
     */
    async onboardAtBank(input: { organizationId: string; activationId: string }): Promise<BankDecision> {
      for (const reference of await uncertainOnboardings(db, input.organizationId, input.activationId)) {
        const earlier = await onboardingDecision(() => bank().onboardingStatus(reference)).catch((error: unknown) => {
          if (notHeld(error)) return undefined;
          throw error;
        });
        if (earlier && earlier.status !== 'REFUSED') return { ...earlier, reference };
      }
      const request = await onboardingRequest(db, input.organizationId, input.activationId);
      if ('refused' in request) return { status: 'REFUSED', code: request.refused };
      return onboardingDecision(() =>
        submitted(
          () => bank().onboard(request),
          () => bank().onboardingStatus(input.activationId),
        ),
      );
    },

    async onboardingStatus(input: {
      organizationId: string;
      activationId: string;
      reference?: string;
    }): Promise<BankDecision> {
      const reference = input.reference ?? input.activationId;
      return {
        ...(await onboardingDecision(() => bank().onboardingStatus(reference))),
        ...(input.reference && { reference }),
      };
    },

    async completeActivation(input: {
      organizationId: string;
      activationId: string;
      customerId: string;
      accountNumber?: string;
    }) {
      await completeActivation(
        db,
        input.organizationId,
        input.activationId,
        { customerId: input.customerId, accountNumber: input.accountNumber ?? null },
        clock.now(),
      );
    },

    /** Makes the link's token, e-mails it, and keeps its hash; answers the digest and when it went. */
    async sendVerificationLink(input: { organizationId: string; verificationId: string; ttlMs: number }) {
      const row = await findEmailVerificationRecipient(db, input.organizationId, input.verificationId);
      if (!row) throw ApplicationFailure.nonRetryable('no such e-mail verification', SelfServiceFailure.NOT_SENT);
      const email = needed(providers.email, 'E-mail');
      const token = newLinkToken();
      const digest = tokenDigest(token);
      const link = `${emailConfirmUrl(config.PUBLIC_BASE_URL, input.verificationId)}?token=${token}`;
      const sentAt = clock.now();
      const claim = await claimOwnSend({
        organizationId: input.organizationId,
        userId: row.user_id,
        purpose: 'EMAIL_VERIFICATION',
        referenceId: input.verificationId,
        channel: 'EMAIL',
        destination: row.email,
        sentAt,
        own: true,
      });
      const expiresAt = new Date(sentAt.getTime() + input.ttlMs);
      // Kept before it is sent: a link in someone's inbox always has its hash here.
      await recordLinkSent(db, input.organizationId, input.verificationId, {
        tokenHash: Buffer.from(digest, 'hex'),
        at: sentAt,
        expiresAt,
      });
      await deliver(claim, () =>
        email.send({
          to: row.email,
          subject: 'Verify your e-mail address',
          text: `Open this link to verify your e-mail address: ${link}\nIt expires at ${expiresAt.toISOString()}.`,
          html: `<p><a href="${link}">Verify your e-mail address</a></p><p>The link expires at ${expiresAt.toISOString()}.</p>`,
        }),
      );
      return { digest, sentAtMs: sentAt.getTime() };
    },

    async markEmailVerified(input: { organizationId: string; verificationId: string }) {
      await markEmailVerified(db, input.organizationId, input.verificationId, clock.now());
    },

    async endEmailVerification(input: {
      organizationId: string;
      verificationId: string;
      status: 'EXPIRED' | 'FAILED';
      reason?: string;
    }) {
      await endEmailVerification(db, input.organizationId, input.verificationId, {
        status: input.status,
        reason: input.reason,
        at: clock.now(),
      });
    },

    async recordPhoneChange(input: {
      organizationId: string;
      changeId: string;
      status: 'AWAITING_AUTHORIZATION' | 'AWAITING_CONFIRMATION' | 'PROCESSING' | 'REJECTED';
      reason?: string;
    }) {
      await recordPhoneChangeStatus(db, input.organizationId, input.changeId, transition(input));
    },

    /** Asks the bank to change the number (our change id is its reference). */
    async changeNumberAtBank(input: { organizationId: string; changeId: string }): Promise<BankDecision> {
      const row = await findPhoneChangeAtBank(db, input.organizationId, input.changeId);
      if (!row?.bank_customer_id) return { status: 'REFUSED', code: 'CUSTOMER_NOT_FOUND' };
      // Checked again before the bank is asked: a number another user took meanwhile never reaches it.
      if (await phoneHeldByAnother(db, input.organizationId, row.user_id, row.new_phone_number))
        return { status: 'REFUSED', code: 'NUMBER_TAKEN' };
      const ids = { reference: input.changeId, bankCustomerId: row.bank_customer_id };
      return changeDecision(() =>
        submitted(
          () => bank().changeMobileNumber({ ...ids, newMobileNumber: row.new_phone_number }),
          () => bank().mobileNumberChangeStatus(ids),
        ),
      );
    },

    async numberChangeStatus(input: { organizationId: string; changeId: string }): Promise<BankDecision> {
      const row = await findPhoneChangeAtBank(db, input.organizationId, input.changeId);
      if (!row?.bank_customer_id) return { status: 'REFUSED', code: 'CUSTOMER_NOT_FOUND' };
      const bankCustomerId = row.bank_customer_id;
      return changeDecision(() => bank().mobileNumberChangeStatus({ reference: input.changeId, bankCustomerId }));
    },

    async completePhoneChange(input: { organizationId: string; changeId: string }) {
      return completePhoneChange(db, input.organizationId, input.changeId, clock.now());
    },
  };
}

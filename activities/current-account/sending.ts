import { ApplicationFailure } from '@temporalio/common';
import { findActivationRecipient } from '../../db/current-account/activation';
import { findEmailVerificationRecipient, recordLinkSent } from '../../db/current-account/email-verification';
import { claimSend, recordSent } from '../../db/current-account/otp-sends';
import { findPhoneChangeRecipients } from '../../db/current-account/phone-change';
import { type OtpPurpose, otpDigest, tokenDigest } from '../../domain/current-account/codes';
import { emailConfirmUrl } from '../../domain/current-account/links';
import { EmailError } from '../../providers/email/protocol';
import { SmsError } from '../../providers/sms/protocol';
import { SelfServiceFailure } from '../../workflows/current-account/messages';
import type { Needs } from '../deps';
import { newLinkToken, newOtp } from './codes';
import { needed } from './steps';

/**
 * Sending codes and links: within the hourly limits, recorded before they go out, to where the
 * run's own row says (no number or address travels in a history). A code is made here and leaves
 * only in the message: the workflow gets its HMAC. Nothing here logs a code, a token, a number or
 * an address.
 */
export function createSendingActivities(
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
  const secret = () => needed(config.OTP_HMAC_SECRET, 'OTP_HMAC_SECRET');
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
  };
}

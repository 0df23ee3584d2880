import { z } from 'zod';
import { optionalUrl } from './fields';

/**
 * Current-account self-service: the providers it talks to (simulators under npm start and the
 * tests). The SMS gateway is Africa's Talking's messaging API (providers/sms), e-mail SendGrid's
 * v3 Mail Send API (providers/email), and the bank our documented onboarding API (providers/bank).
 */
export const currentAccountSettings = {
  /** The SMS gateway's API root (https://api.africastalking.com; its sandbox: https://api.sandbox.africastalking.com). */
  SMS_PROVIDER_URL: optionalUrl,
  /** The gateway application's username ("sandbox" in its sandbox). */
  SMS_USERNAME: z.string().min(1).optional(),
  /** Secret: the gateway application's API key. */
  SMS_API_KEY: z.string().min(1).optional(),
  /** A registered sender id or shortcode; the account's default when unset. */
  SMS_SENDER_ID: z.string().min(1).max(11).optional(),
  /** SendGrid's API root (https://api.sendgrid.com). */
  EMAIL_PROVIDER_URL: optionalUrl,
  /** Secret: a SendGrid API key with Mail Send access. */
  EMAIL_API_KEY: z.string().min(1).optional(),
  /** The verified sender our messages come from. */
  EMAIL_FROM: z.email().optional(),
  /** The bank that opens current accounts. */
  BANK_URL: optionalUrl,
  BANK_CLIENT_ID: z.string().min(1).optional(),
  /** Secret: the bank's OAuth client secret. */
  BANK_CLIENT_SECRET: z.string().min(1).optional(),
};

import { z } from 'zod';
import { addressList, duration, optionalUrl, positiveInt } from './fields';

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
  /**
   * Secret: the token in the delivery-report URL registered with the gateway
   * (`{PUBLIC_BASE_URL}/v1/current-account/callbacks/sms/delivery-reports/{token}`); the gateway
   * signs nothing, so the URL is the credential. Unset: delivery reports are refused (404).
   */
  SMS_CALLBACK_TOKEN: z.string().min(24, 'at least 24 characters').optional(),
  /** The gateway's source addresses for delivery reports (IP or CIDR, comma-separated); empty: any. */
  SMS_CALLBACK_SOURCES: addressList,
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

  /**
   * Secret: the key one-time codes are stored under (HMAC-SHA256); the API and the worker share
   * it. Without it (or without the SMS gateway and the bank) self-service answers 503.
   */
  OTP_HMAC_SECRET: z.string().min(32, 'at least 32 characters').optional(),
  /** How long a one-time code can be used. */
  OTP_TTL: duration('5m'),
  /** Wrong codes allowed per code; the next wrong one rejects the activation or change. */
  OTP_MAX_ATTEMPTS: positiveInt(5),
  /** How soon after a code another may be asked for. */
  OTP_RESEND_COOLDOWN: duration('60s'),
  /** Codes sent per user, and per destination (number or address), in any hour: 429 beyond. */
  OTP_SENDS_PER_HOUR_PER_USER: positiveInt(5),
  OTP_SENDS_PER_HOUR_PER_DESTINATION: positiveInt(5),
  /** How long an activation waits for its code to be confirmed before it is REJECTED (EXPIRED). */
  ACTIVATION_TTL: duration('1h'),
  /** How long a mobile-number change waits for each of its two codes. */
  PHONE_CHANGE_TTL: duration('30m'),
  /** How long an e-mail verification link can be used. */
  EMAIL_VERIFICATION_TTL: duration('24h'),
  /** How often the bank is asked about an onboarding or a number change it is still deciding, and for how long. */
  BANK_STATUS_POLL_INTERVAL: duration('1m'),
  BANK_DECISION_DEADLINE: duration('7d'),
};

import { createHash, createHmac } from 'node:crypto';

/**
 * One-time codes and link tokens, made and kept one way. A code exists in clear only in the
 * message that carries it: what is kept (in the workflow that owns it) is an HMAC-SHA256 under a
 * server secret, bound to what the code is for and the activation or change it belongs to, so a
 * digest of one cannot confirm another and a leaked history or table reveals nothing (six digits
 * would fall to a plain hash at once). The API digests what a caller typed with the same
 * functions; the activities draw the codes (activities/current-account/codes.ts). Node-only:
 * workflows import its types only.
 */
export const OTP_DIGITS = 6;

/** What a code is for: part of its digest, so a code sent for one step never passes another. */
export type OtpPurpose = 'ACTIVATION' | 'PHONE_CHANGE_AUTHORIZATION' | 'PHONE_CHANGE_CONFIRMATION';

/** The digest a code is kept and compared as (hex). */
export const otpDigest = (secret: string, purpose: OtpPurpose, referenceId: string, code: string): string =>
  createHmac('sha256', secret).update(`${purpose}\n${referenceId}\n${code}`).digest('hex');

/** A link token is kept as its SHA-256 (hex): 256 random bits need no key. */
export const tokenDigest = (token: string): string => createHash('sha256').update(token).digest('hex');

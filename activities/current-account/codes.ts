import { randomBytes, randomInt } from 'node:crypto';
import { OTP_DIGITS } from '../../domain/current-account/codes';

/** Drawing one-time codes and link tokens; how they are kept is domain/current-account/codes.ts. */

/** A uniformly random code of OTP_DIGITS digits (leading zeros kept). */
export const newOtp = (): string => String(randomInt(0, 10 ** OTP_DIGITS)).padStart(OTP_DIGITS, '0');

/** A single-use e-mail link token: 256 random bits, URL-safe. */
export const newLinkToken = (): string => randomBytes(32).toString('base64url');

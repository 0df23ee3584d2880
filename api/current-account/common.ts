import type { Context } from 'koa';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../../config';
import { sendsInLastHour } from '../../db/current-account/otp-sends';
import { OTP_DIGITS } from '../../activities/current-account/codes';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { type OtpAnswer, OtpRefusal } from '../../workflows/current-account/messages';
import type { UserCaller } from '../auth/caller';
import type { AppDeps } from '../deps';
import type { RouteAuth } from '../route';
import type { Refused } from './workflows';

/** A user acting on their own current account; users on the waiting list get WAITING_LIST. */
export const SELF: RouteAuth = { schemes: ['user'], refuseWaitingList: true };

export const self = (ctx: Context) => {
  const caller = ctx.state.caller as UserCaller;
  return { organizationId: caller.organizationId, userId: caller.userId };
};

export const iso = (value: Date | null | undefined) => (value ? new Date(value).toISOString() : null);

/** A one-time code as typed: exactly OTP_DIGITS digits (anything else is refused before it counts as an attempt). */
export const OtpCode = z
  .string()
  .regex(new RegExp(`^\\d{${OTP_DIGITS}}$`), `${OTP_DIGITS} digits`)
  .meta({ description: `The ${OTP_DIGITS}-digit code that was sent`, example: '123456' });
export const OtpBody = z.strictObject({ otp_code: OtpCode });

/** The errors the self-service routes answer, for the document. */
export const OTP_ERRORS = {
  BAD_REQUEST:
    'a wrong code (the description says how many attempts are left; the last one rejects the activation or change), ' +
    'an expired code (ask for a new one), or one that is not awaited (the activation or change has moved on or ended)',
  TOO_MANY_REQUESTS: 'a resend within the cool-down (Retry-After says when)',
};

/** The self-service providers and the code key must be configured; otherwise 503. */
export function requireSelfService(deps: AppDeps, needs: ('sms' | 'email' | 'bank')[]): string {
  const secret = deps.config.OTP_HMAC_SECRET;
  if (!secret || needs.some((provider) => !deps.providers[provider]))
    throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, 'Current-account self-service is not configured');
  return secret;
}

const retryAfter = (ms: number) => ({ 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) });

/**
 * A submitted code's answer as the API's: nothing for an accepted one; 400 with the attempts left
 * for a wrong one, and for an expired one or one not awaited; 429 for a resend too soon.
 */
export function answerOf(answer: OtpAnswer | Refused | { sentAtMs: number }): void {
  if ('refused' in answer) {
    if (answer.refused === OtpRefusal.COOLDOWN)
      throw new ServiceError(ErrorCode.TOO_MANY_REQUESTS, answer.message, [], retryAfter(answer.retryAfterMs ?? 1_000));
    throw new ServiceError(ErrorCode.BAD_REQUEST, answer.message);
  }
  if (!('outcome' in answer) || answer.outcome === 'ACCEPTED') return;
  if (answer.outcome === 'WRONG_CODE')
    throw new ServiceError(
      ErrorCode.BAD_REQUEST,
      `Wrong code: ${answer.attemptsLeft} attempt${answer.attemptsLeft === 1 ? '' : 's'} left`,
    );
  throw new ServiceError(ErrorCode.BAD_REQUEST, 'Wrong code, and no attempts left: rejected. Start again.');
}

/**
 * The hourly limits on codes sent, per user and per destination (a number or an address), checked
 * before anything is sent: 429 with Retry-After (when the oldest send in the hour ages out).
 */
export async function withinSendLimits(
  db: Knex,
  config: Config,
  ids: { organizationId: string; userId: string },
  destinations: string[],
  now: Date,
): Promise<void> {
  const counts = await sendsInLastHour(db, ids.organizationId, ids.userId, destinations, now);
  for (const { key, count, oldest } of counts) {
    const limit = key === 'user' ? config.OTP_SENDS_PER_HOUR_PER_USER : config.OTP_SENDS_PER_HOUR_PER_DESTINATION;
    if (count >= limit)
      throw new ServiceError(
        ErrorCode.TOO_MANY_REQUESTS,
        'Too many codes sent in the last hour',
        [],
        retryAfter(oldest.getTime() + 3_600_000 - now.getTime()),
      );
  }
}

import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Config } from '../../config';
import { overSendLimits } from '../../db/current-account/otp-sends';
import { OTP_DIGITS } from '../../domain/current-account/codes';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { type OtpAnswer, OtpRefusal, SelfServiceFailure } from '../../workflows/current-account/messages';
import type { UserCaller } from '../auth/caller';
import type { Needs } from '../deps';
import { IdempotencyKeyHeader } from '../middleware/idempotency';
import type { RouteAuth } from '../route';
import type { Refused } from './workflows';

type SendLimitConfig = Pick<Config, 'OTP_SENDS_PER_HOUR_PER_USER' | 'OTP_SENDS_PER_HOUR_PER_DESTINATION'>;

/** A user acting on their own current account; users on the waiting list get WAITING_LIST. */
export const SELF: RouteAuth = { schemes: ['user'], refuseWaitingList: true };

export const self = (ctx: Context) => {
  const caller = ctx.state.caller as UserCaller;
  return { organizationId: caller.organizationId, userId: caller.userId };
};

/**
 * Answers a self-service resource just asked for: a new one (201) once its run has started (the
 * row dropped again when the start fails: nothing was sent), or the caller's open one (200).
 */
export async function answerStarted<R extends { id: string }>(
  ctx: Context,
  made: { row: R; created: boolean },
  run: { start: (id: string) => Promise<void>; drop: (id: string) => Promise<void> },
  view: (row: R) => unknown,
): Promise<void> {
  if (made.created) {
    try {
      await run.start(made.row.id);
    } catch (error) {
      await run.drop(made.row.id);
      throw error;
    }
  }
  ctx.status = made.created ? 201 : 200;
  ctx.body = view(made.row);
}

export { isoOrNull as iso } from '../../domain/iso';

/** A one-time code as typed: exactly OTP_DIGITS digits (anything else is refused before it counts as an attempt). */
export const OtpCode = z
  .string()
  .regex(new RegExp(`^\\d{${OTP_DIGITS}}$`), `${OTP_DIGITS} digits`)
  .meta({ description: `The ${OTP_DIGITS}-digit code that was sent`, example: '123456' });
export const OtpBody = z.strictObject({ otp_code: OtpCode });

/**
 * A submission retried with its Idempotency-Key (and the same code) is the same Update: the run
 * answers it once, so a retry after a lost answer gets that answer and a wrong code counts once.
 */
export const SubmissionHeaders = IdempotencyKeyHeader;
export const submissionId = (headers: { 'idempotency-key'?: string }, self: { userId: string }, digest: string) =>
  headers['idempotency-key']
    ? `submission-${createHash('sha256').update(`${self.userId}\n${headers['idempotency-key']}\n${digest}`).digest('hex')}`
    : undefined;

/** The errors the self-service routes answer, for the document. */
export const OTP_ERRORS = {
  BAD_REQUEST:
    'a wrong code (the description says how many attempts are left), ' +
    'an expired code (ask for a new one), or one that is not awaited (the activation or change has moved on or ended)',
  TOO_MANY_REQUESTS:
    'the wrong code that used up the attempts (the activation or change is rejected; Retry-After says when to start again)',
};

/** The self-service providers and the code key must be configured; otherwise 503. */
export function requireSelfService(
  deps: Needs<'providers', 'OTP_HMAC_SECRET'>,
  needs: ('sms' | 'email' | 'bank')[],
): string {
  const secret = deps.config.OTP_HMAC_SECRET;
  if (!secret || needs.some((provider) => !deps.providers[provider]))
    throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, 'Current-account self-service is not configured');
  return secret;
}

const retryAfter = (ms: number) => ({ 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) });

/**
 * A submitted code's answer as the API's: nothing for an accepted one; 400 with the attempts left
 * for a wrong one, and for an expired one or one not awaited; 429 for the wrong code that used up
 * the attempts (Retry-After: when another code may be asked for), for a resend too soon and over
 * the hourly limits; 503 when the code could not be sent.
 */
export function answerOf(
  answer: OtpAnswer | Refused | { sentAtMs: number },
  config: Pick<Config, 'OTP_RESEND_COOLDOWN'>,
): void {
  if ('refused' in answer) {
    if (answer.refused === OtpRefusal.COOLDOWN || answer.refused === SelfServiceFailure.SEND_LIMIT)
      throw new ServiceError(ErrorCode.TOO_MANY_REQUESTS, answer.message, [], retryAfter(answer.retryAfterMs ?? 1_000));
    if (answer.refused === SelfServiceFailure.NOT_SENT)
      throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, 'The code could not be sent: try again later');
    throw new ServiceError(ErrorCode.BAD_REQUEST, answer.message);
  }
  if (!('outcome' in answer) || answer.outcome === 'ACCEPTED') return;
  if (answer.outcome === 'WRONG_CODE')
    throw new ServiceError(
      ErrorCode.BAD_REQUEST,
      `Wrong code: ${answer.attemptsLeft} attempt${answer.attemptsLeft === 1 ? '' : 's'} left`,
    );
  throw new ServiceError(
    ErrorCode.TOO_MANY_REQUESTS,
    'Too many wrong codes: rejected. Start again.',
    [],
    retryAfter(config.OTP_RESEND_COOLDOWN),
  );
}

/**
 * The hourly limits on codes sent, per user and per foreign destination (a number that is not the
 * caller's own), checked before anything starts: 429 with Retry-After (when the oldest send in
 * the hour ages out). The sending step claims each send under the same limits again.
 */
export async function withinSendLimits(
  db: Knex,
  config: SendLimitConfig,
  ids: { organizationId: string; userId: string },
  foreign: string[],
  now: Date,
): Promise<void> {
  const over = await overSendLimits(db, ids, foreign, sendLimits(config), now);
  if (over)
    throw new ServiceError(
      ErrorCode.TOO_MANY_REQUESTS,
      'Too many codes sent in the last hour',
      [],
      retryAfter(over.retryAfterMs),
    );
}

const sendLimits = (config: SendLimitConfig) => ({
  perUser: config.OTP_SENDS_PER_HOUR_PER_USER,
  perDestination: config.OTP_SENDS_PER_HOUR_PER_DESTINATION,
});

import type { Context } from 'koa';
import { z } from 'zod';
import {
  type ActivationRow,
  createActivation,
  dropInitializingActivation,
  findActivation,
  findCurrentAccount,
  findLatestActivation,
} from '../../db/current-account/activation';
import { otpDigest } from '../../domain/current-account/codes';
import { activationView } from '../../domain/current-account/views';
import { findProvisionedSubject } from '../../db/kyc/provisioned';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute } from '../route';
import {
  answerOf,
  answerStarted,
  OTP_ERRORS,
  OtpBody,
  requireSelfService,
  SELF,
  self,
  SubmissionHeaders,
  submissionId,
  withinSendLimits,
} from './common';
import type { SelfServiceWorkflows } from './workflows';

export const Activation = z
  .object({
    id: z.uuid(),
    status: z.enum(['INITIALIZING', 'AWAITING_OTP', 'ONBOARDING', 'COMPLETED', 'REJECTED']).meta({
      description: 'INITIALIZING → AWAITING_OTP → ONBOARDING → COMPLETED, or REJECTED (see rejection_reason)',
    }),
    created_at: z.iso.datetime(),
    otp_confirmed_at: z.iso.datetime().nullable(),
    completed_at: z.iso.datetime().nullable(),
    rejection_reason: z
      .string()
      .nullable()
      .meta({
        description:
          'Set when REJECTED: OTP_ATTEMPTS_EXHAUSTED, EXPIRED (the code was not confirmed in time), OTP_NOT_SENT, ' +
          'SUBJECT_NOT_PROVISIONED, BANK_<the bank’s refusal: DUPLICATE_CUSTOMER, ID_MISMATCH, INVALID_DOCUMENT, UNDERAGE, ' +
          'VALIDATION_ERROR>, BANK_NO_DECISION, BANK_UNAVAILABLE',
      }),
    current_verification: z
      .object({ channel: z.enum(['SMS']).meta({ description: 'Where the code went: SMS to the user’s mobile' }) })
      .nullable(),
    resource_id: z.string().meta({ description: 'act_<32 hex digits>' }),
    rejected_at: z.iso.datetime().nullable().meta({ description: 'Extension: when it was REJECTED' }),
  })
  .meta({ id: 'CurrentAccountActivation' });

const view = (row: ActivationRow): z.infer<typeof Activation> => activationView(row);

const NO_ACTIVATION = 'the caller has no current account, or never started an activation';
const TAG = ['current account'];
const SUCCESSOR = '/v1/user/accounts/current/activation/otp/confirm';

type ActivationDeps = Needs<
  'db' | 'clock' | 'providers',
  'OTP_HMAC_SECRET' | 'OTP_RESEND_COOLDOWN' | 'OTP_SENDS_PER_HOUR_PER_USER' | 'OTP_SENDS_PER_HOUR_PER_DESTINATION'
>;

/**
 * Current-account activation (spec 4.7): start (extension), the caller's most recent activation,
 * the code's confirmation (its successor path and the deprecated one) and resend (extension).
 * The activation's run owns the code; this module sends it the digest of what was typed.
 */
export function activationRoutes(deps: ActivationDeps, workflows: SelfServiceWorkflows): AnyRoute[] {
  const { db, clock, config } = deps;

  async function latest(ctx: Context): Promise<ActivationRow> {
    const { organizationId, userId } = self(ctx);
    const account = await findCurrentAccount(db, organizationId, userId);
    const row = account ? await findLatestActivation(db, organizationId, userId) : undefined;
    if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, 'No current-account activation');
    return row;
  }
  async function reread(ctx: Context, id: string) {
    const { organizationId, userId } = self(ctx);
    ctx.body = view((await findActivation(db, organizationId, userId, id))!);
  }
  async function confirm(ctx: Context, row: ActivationRow, code: string, headers: { 'idempotency-key'?: string }) {
    const secret = requireSelfService(deps, ['sms', 'bank']);
    const digest = otpDigest(secret, 'ACTIVATION', row.id, code);
    answerOf(await workflows.confirmActivation(row.id, digest, submissionId(headers, self(ctx), digest)), config);
    await reread(ctx, row.id);
  }

  const confirmRoute = {
    method: 'post' as const,
    tags: TAG,
    auth: SELF,
    request: { headers: SubmissionHeaders, body: OtpBody },
    responses: { 200: { description: 'The activation, ONBOARDING or beyond', schema: Activation } },
    errors: { ...OTP_ERRORS, NOT_FOUND: NO_ACTIVATION },
  };

  return [
    startActivationRoute(deps, workflows),
    defineRoute({
      method: 'get',
      path: '/v1/user/accounts/current/activation',
      operationId: 'getCurrentAccountActivation',
      summary: 'The caller’s most recent current-account activation, in any state',
      description: 'To resume the OTP step, or read the outcome, without the activation id.',
      tags: TAG,
      auth: SELF,
      responses: { 200: { description: 'The activation', schema: Activation } },
      errors: { NOT_FOUND: NO_ACTIVATION },
      async handler(ctx) {
        ctx.body = view(await latest(ctx));
      },
    }),
    defineRoute({
      ...confirmRoute,
      path: SUCCESSOR,
      operationId: 'confirmCurrentAccountActivationOtp',
      summary: 'Confirm the activation code (extension; the successor of the deprecated confirm path)',
      description:
        'Confirms the code of the caller’s most recent activation. A wrong code is 400 with the attempts left; the last ' +
        'wrong one rejects the activation (REJECTED, OTP_ATTEMPTS_EXHAUSTED); an expired code is 400 (resend for another).',
      extension: true,
      async handler(ctx, { headers, body }) {
        await confirm(ctx, await latest(ctx), body.otp_code, headers);
      },
    }),
    defineRoute({
      ...confirmRoute,
      path: '/v1/me/current-account/activations/{activationId}/otp/confirm',
      operationId: 'confirmCurrentAccountActivationOtpDeprecated',
      summary: `Confirm the activation code (deprecated: use POST ${SUCCESSOR})`,
      deprecated: true,
      deprecation: { successor: SUCCESSOR },
      request: { params: z.object({ activationId: z.uuid() }), headers: SubmissionHeaders, body: OtpBody },
      async handler(ctx, { params, headers, body }) {
        const { organizationId, userId } = self(ctx);
        const row = await findActivation(db, organizationId, userId, params.activationId);
        if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such activation');
        await confirm(ctx, row, body.otp_code, headers);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/user/accounts/current/activation/otp/resend',
      operationId: 'resendCurrentAccountActivationOtp',
      summary: 'Send another activation code (extension)',
      description:
        'A new code replaces the previous one (with a fresh count of attempts). Refused within the cool-down after the last ' +
        'code, and beyond the hourly limits per user and per number: 429 with Retry-After.',
      extension: true,
      tags: TAG,
      auth: SELF,
      responses: { 200: { description: 'The activation, AWAITING_OTP', schema: Activation } },
      errors: {
        NOT_FOUND: NO_ACTIVATION,
        BAD_REQUEST: 'the activation is not awaiting a code',
        TOO_MANY_REQUESTS: 'within the cool-down, or beyond the hourly limits (Retry-After)',
        SERVICE_UNAVAILABLE:
          'the code could not be sent (the previous one stays valid), or self-service is not configured',
      },
      async handler(ctx) {
        requireSelfService(deps, ['sms', 'bank']);
        const row = await latest(ctx);
        const ids = self(ctx);
        await withinSendLimits(db, config, ids, [], clock.now());
        answerOf(await workflows.resendActivationCode(row.id), config);
        await reread(ctx, row.id);
      },
    }),
  ];
}

/** POST activation: start one (a code by SMS), or answer the open one. */
function startActivationRoute(deps: ActivationDeps, workflows: SelfServiceWorkflows) {
  const { db, clock, config } = deps;
  return defineRoute({
    method: 'post',
    path: '/v1/user/accounts/current/activation',
    operationId: 'startCurrentAccountActivation',
    summary: 'Start activating the caller’s current account (extension)',
    description:
      'Sends a code by SMS to the caller’s mobile and answers the activation, INITIALIZING (201). While one is open ' +
      '(INITIALIZING, AWAITING_OTP, ONBOARDING) it is answered instead (200). Needs a current account that is not active ' +
      'yet (every customer’s is PENDING_ACTIVATION from sign-up; until it is ACTIVE it takes no deposit, pays nothing ' +
      'out and backs no loan) and a provisioned KYC subject: an APPROVED server_upload verification stating the ID ' +
      'number and date_of_birth, with a full name, an ID card, alien card or passport, and its images (404 otherwise, ' +
      'as spec 7 says for no provisioned subject). COMPLETED leaves the account ACTIVE with the bank’s customer and ' +
      'account numbers.',
    extension: true,
    tags: TAG,
    auth: SELF,
    responses: {
      201: { description: 'Started', schema: Activation },
      200: { description: 'The open activation', schema: Activation },
    },
    errors: {
      NOT_FOUND: 'no current account, or no provisioned KYC subject',
      BAD_REQUEST: 'the current account is already active',
      TOO_MANY_REQUESTS: 'too many codes sent to the caller or the number in the last hour (Retry-After)',
      SERVICE_UNAVAILABLE: 'self-service is not configured',
    },
    async handler(ctx) {
      requireSelfService(deps, ['sms', 'bank']);
      const ids = self(ctx);
      const account = await findCurrentAccount(db, ids.organizationId, ids.userId);
      if (!account) throw new ServiceError(ErrorCode.NOT_FOUND, 'No current account');
      const open = await findLatestActivation(db, ids.organizationId, ids.userId);
      if (open && ['INITIALIZING', 'AWAITING_OTP', 'ONBOARDING'].includes(open.status)) {
        ctx.body = view(open);
        return;
      }
      if (account.status !== 'PENDING_ACTIVATION')
        throw new ServiceError(ErrorCode.BAD_REQUEST, 'The current account is already active');
      // Provisioned as the subject-details lookup says (domain/kyc/provisioned.ts); its mobile number gets the code.
      const subject = await findProvisionedSubject(db, ids.organizationId, ids.userId);
      if ('missing' in subject)
        throw new ServiceError(ErrorCode.NOT_FOUND, `No provisioned KYC subject (${subject.missing} missing)`);
      const now = clock.now();
      await withinSendLimits(db, config, ids, [], now);
      await answerStarted(
        ctx,
        await createActivation(db, ids.organizationId, ids.userId, account.id, now),
        {
          start: (activationId) => workflows.startActivation({ activationId, ...ids }),
          drop: (id) => dropInitializingActivation(db, ids.organizationId, id),
        },
        view,
      );
    },
  });
}

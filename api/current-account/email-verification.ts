import type { Context } from 'koa';
import { z } from 'zod';
import {
  createEmailVerification,
  dropInitializingEmailVerification,
  type EmailVerificationRow,
  findEmailVerification,
} from '../../db/current-account/email-verification';
import { findUserContact } from '../../db/current-account/users';
import { tokenDigest } from '../../domain/current-account/codes';
import { emailConfirmUrl, emailVerificationUrl } from '../../domain/current-account/links';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { Needs } from '../deps';
import { publicBaseUrl } from '../public-url';
import { type AnyRoute, defineRoute } from '../route';
import {
  answerOf,
  answerStarted,
  iso,
  requireSelfService,
  SELF,
  self,
  SubmissionHeaders,
  submissionId,
  withinSendLimits,
} from './common';
import type { SelfServiceWorkflows } from './workflows';

export const EmailVerification = z
  .object({
    id: z.uuid(),
    url: z.url().meta({ description: 'This resource' }),
    status: z.enum(['INITIALIZING', 'SENT', 'VERIFIED', 'EXPIRED', 'FAILED']).meta({
      description:
        'INITIALIZING → SENT → VERIFIED, or EXPIRED (the link not used in time) or FAILED (see failure_reason)',
    }),
    created_at: z.iso.datetime(),
    verified_at: z.iso.datetime().nullable(),
    confirm_url: z.url().meta({
      description:
        'Where the token of the e-mailed link is confirmed (POST, body {token}); the e-mailed link is this URL with ?token=',
    }),
    resource_id: z.string().meta({ description: 'emv_<32 hex digits>' }),
    expires_at: z.iso.datetime().nullable().meta({ description: 'Extension: when the link stops working' }),
    failure_reason: z
      .string()
      .nullable()
      .meta({ description: 'Extension, when FAILED: EMAIL_NOT_SENT or TOO_MANY_ATTEMPTS' }),
  })
  .meta({ id: 'EmailVerification' });

const TAG = ['current account'];
const Id = z.object({ emailVerificationId: z.uuid() });
/** A link token as issued: 256 bits, base64url (43 characters). */
const Token = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'the token from the e-mailed link');

/**
 * The routes of an e-mail verification (spec 4.7). A customer starts one and reads their own, and
 * the e-mailed link confirms it; starting and confirming are extensions to the spec. The
 * verification's run owns the link, and this module sends it the SHA-256 of the token that came
 * back.
 */
export function emailVerificationRoutes(
  deps: Needs<
    'db' | 'clock' | 'providers',
    | 'OTP_HMAC_SECRET'
    | 'OTP_RESEND_COOLDOWN'
    | 'OTP_SENDS_PER_HOUR_PER_USER'
    | 'OTP_SENDS_PER_HOUR_PER_DESTINATION'
    | 'PUBLIC_BASE_URL'
    | 'HOST'
    | 'PORT'
    | 'TRUST_PROXY'
    | 'TRUST_PROXY_HOPS'
  >,
  workflows: SelfServiceWorkflows,
): AnyRoute[] {
  const { db, clock, config } = deps;
  const view = (ctx: Context, row: EmailVerificationRow): z.infer<typeof EmailVerification> => ({
    id: row.id,
    url: emailVerificationUrl(publicBaseUrl(ctx, config), row.id),
    status: row.status,
    created_at: iso(row.created_at)!,
    verified_at: iso(row.verified_at),
    confirm_url: emailConfirmUrl(publicBaseUrl(ctx, config), row.id),
    resource_id: `emv_${row.id.replace(/-/g, '')}`,
    expires_at: iso(row.expires_at),
    failure_reason: row.failure_reason,
  });
  async function own(ctx: Context, id: string): Promise<EmailVerificationRow> {
    const { organizationId, userId } = self(ctx);
    const row = await findEmailVerification(db, organizationId, userId, id);
    if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such e-mail verification');
    return row;
  }

  return [
    defineRoute({
      method: 'post',
      path: '/v1/user/accounts/current/email/verifications',
      operationId: 'startEmailVerification',
      summary: 'E-mail a verification link to the caller’s address (extension)',
      description:
        'Answers the verification, INITIALIZING (201); while one is open (INITIALIZING, SENT) it is answered instead (200). ' +
        'The link carries a single-use token (kept only as its SHA-256) and expires after EMAIL_VERIFICATION_TTL.',
      extension: true,
      tags: TAG,
      auth: SELF,
      responses: {
        201: { description: 'Started', schema: EmailVerification },
        200: { description: 'The open verification', schema: EmailVerification },
      },
      errors: {
        BAD_REQUEST: 'the caller’s e-mail is already verified',
        TOO_MANY_REQUESTS: 'too many messages sent to the caller or the address in the last hour (Retry-After)',
        SERVICE_UNAVAILABLE: 'self-service is not configured',
      },
      async handler(ctx) {
        requireSelfService(deps, ['email']);
        const ids = self(ctx);
        const user = await findUserContact(db, ids.organizationId, ids.userId);
        if (!user) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such user');
        if (user.email_verified_at) throw new ServiceError(ErrorCode.BAD_REQUEST, 'The e-mail is already verified');
        const now = clock.now();
        await withinSendLimits(db, config, ids, [], now);
        await answerStarted(
          ctx,
          await createEmailVerification(db, ids.organizationId, ids.userId, user.email, now),
          {
            start: (verificationId) => workflows.startEmailVerification({ verificationId, ...ids }),
            drop: (id) => dropInitializingEmailVerification(db, ids.organizationId, id),
          },
          (row) => view(ctx, row),
        );
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/user/accounts/current/email/verifications/{emailVerificationId}',
      operationId: 'getEmailVerification',
      summary: 'One of the caller’s e-mail verifications',
      tags: TAG,
      auth: SELF,
      request: { params: Id },
      responses: { 200: { description: 'The verification', schema: EmailVerification } },
      errors: { NOT_FOUND: 'no such verification of the caller' },
      async handler(ctx, { params }) {
        ctx.body = view(ctx, await own(ctx, params.emailVerificationId));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/user/accounts/current/email/verifications/{emailVerificationId}/confirm',
      operationId: 'confirmEmailVerification',
      summary: 'Confirm the token of the e-mailed link (extension)',
      description:
        'The client app opens the e-mailed link (this path with ?token=) and posts the token, signed in as the user: ' +
        'VERIFIED, and the user’s e-mail verified. The token works once, until expires_at; a wrong one is 400 with the ' +
        'attempts left, and the last wrong one FAILS the verification.',
      extension: true,
      tags: TAG,
      auth: SELF,
      request: { params: Id, headers: SubmissionHeaders, body: z.strictObject({ token: Token }) },
      responses: { 200: { description: 'The verification, VERIFIED', schema: EmailVerification } },
      errors: {
        NOT_FOUND: 'no such verification of the caller',
        BAD_REQUEST: 'a wrong token, an expired link, or a verification no longer SENT (used, expired or failed)',
      },
      async handler(ctx, { params, headers, body }) {
        requireSelfService(deps, ['email']);
        const row = await own(ctx, params.emailVerificationId);
        const digest = tokenDigest(body.token);
        answerOf(await workflows.confirmEmail(row.id, digest, submissionId(headers, self(ctx), digest)), config);
        ctx.body = view(ctx, await own(ctx, row.id));
      },
    }),
  ];
}

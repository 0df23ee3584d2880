import type { Context } from 'koa';
import { z } from 'zod';
import { findCurrentAccount } from '../../db/current-account/activation';
import { findUserContact } from '../../db/current-account/users';
import {
  createPhoneChange,
  dropInitializingPhoneChange,
  findPhoneChange,
  type PhoneChangeRow,
} from '../../db/current-account/phone-change';
import { otpDigest } from '../../domain/current-account/codes';
import { phoneChangeUrl } from '../../domain/current-account/links';
import { phoneChangeView } from '../../domain/current-account/views';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { isKenyanMobile } from '../../domain/identifiers';
import type { Needs } from '../deps';
import { publicBaseUrl } from '../public-url';
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

export const PhoneChange = z
  .object({
    id: z.uuid(),
    url: z.url().meta({ description: 'This resource' }),
    status: z
      .enum(['INITIALIZING', 'AWAITING_AUTHORIZATION', 'AWAITING_CONFIRMATION', 'PROCESSING', 'COMPLETED', 'REJECTED'])
      .meta({
        description:
          'INITIALIZING → AWAITING_AUTHORIZATION → AWAITING_CONFIRMATION → PROCESSING (at the bank) → COMPLETED, or REJECTED',
      }),
    authorization_channel: z.enum(['OLD_MOBILE', 'EMAIL']),
    created_at: z.iso.datetime(),
    authorized_at: z.iso.datetime().nullable(),
    completed_at: z.iso.datetime().nullable(),
    authorize_url: z.url().meta({ description: 'POST the owner’s code here (body {otp_code})' }),
    confirm_url: z.url().meta({ description: 'POST the code sent to the new mobile here (body {otp_code})' }),
    resource_id: z.string().meta({ description: 'mnc_<32 hex digits>' }),
    rejection_reason: z
      .string()
      .nullable()
      .meta({
        description:
          'Extension, when REJECTED: OTP_ATTEMPTS_EXHAUSTED, EXPIRED, OTP_NOT_SENT, NUMBER_TAKEN, BANK_<the bank’s refusal>, ' +
          'BANK_NO_DECISION, BANK_UNAVAILABLE',
      }),
    rejected_at: z.iso.datetime().nullable().meta({ description: 'Extension: when it was REJECTED' }),
  })
  .meta({ id: 'MobileNumberChange' });

const Digits = (description: string, max: number) =>
  z
    .string()
    .regex(new RegExp(`^\\d{1,${max}}$`), 'digits only')
    .meta({ description });
const ChangeRequest = z.strictObject({
  new_mobile_country_code: Digits('The country calling code, digits only: 254 (Kenya) is served', 3),
  new_mobile_number: Digits('The national number, digits only, with or without its leading 0', 12),
  authorization_channel: z.enum(['OLD_MOBILE', 'EMAIL']).meta({
    description: 'Where the owner’s authorization code goes: the current mobile, or the e-mail (once verified)',
  }),
});
const Id = z.object({ changeId: z.uuid() });
const TAG = ['current account'];

/** The new number in E.164, when it is a Kenyan mobile (the numbers mobile money serves); else undefined. */
function newNumber(countryCode: string, national: string): string | undefined {
  if (countryCode !== '254') return undefined;
  const number = `+254${national.replace(/^0/, '')}`;
  return isKenyanMobile(number) ? number : undefined;
}

type PhoneChangeDeps = Needs<
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
>;

/** A change as the API answers it. */
const changeView = (baseUrl: string | undefined, row: PhoneChangeRow): z.infer<typeof PhoneChange> =>
  phoneChangeView(baseUrl, row);

/**
 * The routes of a mobile-number change (spec 4.7). A customer requests the change, reads it, and
 * gives its two proofs: the owner authorizes it, then the new number confirms it. Reading and the
 * two proofs are extensions to the spec. The change's run owns the codes and asks the bank.
 */
export function phoneChangeRoutes(deps: PhoneChangeDeps, workflows: SelfServiceWorkflows): AnyRoute[] {
  const { db, config } = deps;
  const view = (ctx: Context, row: PhoneChangeRow) => changeView(publicBaseUrl(ctx, config), row);
  async function own(ctx: Context, id: string): Promise<PhoneChangeRow> {
    const { organizationId, userId } = self(ctx);
    const row = await findPhoneChange(db, organizationId, userId, id);
    if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such mobile-number change');
    return row;
  }
  const proof = (step: 'authorize' | 'confirm') =>
    defineRoute({
      method: 'post',
      path: `/v1/user/accounts/current/phone/changes/{changeId}/${step}`,
      operationId: step === 'authorize' ? 'authorizeMobileNumberChange' : 'confirmMobileNumberChange',
      summary:
        step === 'authorize'
          ? 'The owner’s authorization code, sent to the old mobile or the verified e-mail (extension)'
          : 'The code sent to the new mobile, proving it (extension)',
      description:
        step === 'authorize'
          ? 'AWAITING_AUTHORIZATION → AWAITING_CONFIRMATION (authorized_at): a code then goes to the new mobile.'
          : 'AWAITING_CONFIRMATION → PROCESSING: the bank changes the number, then the user’s number changes (COMPLETED).',
      extension: true,
      tags: TAG,
      auth: SELF,
      request: { params: Id, headers: SubmissionHeaders, body: OtpBody },
      responses: { 200: { description: 'The change', schema: PhoneChange } },
      errors: { ...OTP_ERRORS, NOT_FOUND: 'no such change of the caller' },
      async handler(ctx, { params, headers, body }) {
        const secret = requireSelfService(deps, ['sms', 'bank']);
        const row = await own(ctx, params.changeId);
        const purpose = step === 'authorize' ? 'PHONE_CHANGE_AUTHORIZATION' : 'PHONE_CHANGE_CONFIRMATION';
        const digest = otpDigest(secret, purpose, row.id, body.otp_code);
        const updateId = submissionId(headers, self(ctx), digest);
        answerOf(
          step === 'authorize'
            ? await workflows.authorizePhoneChange(row.id, digest, updateId)
            : await workflows.confirmPhoneChange(row.id, digest, updateId),
          config,
        );
        ctx.body = view(ctx, await own(ctx, row.id));
      },
    });

  return [
    requestChangeRoute(deps, workflows),
    defineRoute({
      method: 'get',
      path: '/v1/user/accounts/current/phone/changes/{changeId}',
      operationId: 'getMobileNumberChange',
      summary: 'One of the caller’s mobile-number changes (extension)',
      extension: true,
      tags: TAG,
      auth: SELF,
      request: { params: Id },
      responses: { 200: { description: 'The change', schema: PhoneChange } },
      errors: { NOT_FOUND: 'no such change of the caller' },
      async handler(ctx, { params }) {
        ctx.body = view(ctx, await own(ctx, params.changeId));
      },
    }),
    proof('authorize'),
    proof('confirm'),
  ];
}

/** POST changes: request a change of the mobile number (a code to its owner first). */
function requestChangeRoute(deps: PhoneChangeDeps, workflows: SelfServiceWorkflows) {
  const { db, clock, config } = deps;
  return defineRoute({
    method: 'post',
    path: '/v1/user/accounts/current/phone/changes',
    operationId: 'requestMobileNumberChange',
    summary: 'Change the caller’s mobile number',
    description:
      'Sends the owner an authorization code (to the current mobile, or to the e-mail once verified) and answers the ' +
      'change, INITIALIZING (201). While one is open, the same request (number and channel) answers it (200); one for ' +
      'another number or channel is 409 CONFLICT naming the open change (Location: its URL). After the owner authorizes, a code ' +
      'goes to the new mobile; once it is confirmed the bank changes the number, and the user’s number changes in the ' +
      'same database transaction that records the bank’s confirmation. The bank is asked only after both codes, so ' +
      'nobody changes the bank’s record without the owner. Needs a current account opened at the bank (activated).',
    tags: TAG,
    auth: SELF,
    request: { body: ChangeRequest },
    responses: {
      201: { description: 'Requested', schema: PhoneChange },
      200: { description: 'The open change', schema: PhoneChange },
    },
    errors: {
      BAD_REQUEST:
        'not a Kenyan mobile number, the caller’s own number, or the EMAIL channel while the e-mail is unverified (a ' +
        'number another user holds is answered as a free one: the change ends REJECTED NUMBER_TAKEN before the bank)',
      NOT_FOUND: 'no current account opened at the bank',
      CONFLICT: 'a change for another number or channel is open (named in the description; Location is its URL)',
      TOO_MANY_REQUESTS: 'too many codes sent to the caller or a destination in the last hour (Retry-After)',
      SERVICE_UNAVAILABLE: 'self-service is not configured',
    },
    async handler(ctx, { body }) {
      requireSelfService(deps, body.authorization_channel === 'EMAIL' ? ['sms', 'bank', 'email'] : ['sms', 'bank']);
      const ids = self(ctx);
      const account = await findCurrentAccount(db, ids.organizationId, ids.userId);
      if (!account || account.status !== 'ACTIVE' || !account.bank_customer_id)
        throw new ServiceError(ErrorCode.NOT_FOUND, 'No current account opened at the bank');
      const user = await findUserContact(db, ids.organizationId, ids.userId);
      if (!user) throw new ServiceError(ErrorCode.NOT_FOUND, 'No current account opened at the bank');
      const number = newNumber(body.new_mobile_country_code, body.new_mobile_number);
      if (!number) throw new ServiceError(ErrorCode.BAD_REQUEST, 'Not a Kenyan mobile number (+2547… or +2541…)');
      if (number === user.phone_number) throw new ServiceError(ErrorCode.BAD_REQUEST, 'That is already your number');
      if (body.authorization_channel === 'EMAIL' && !user.email_verified_at)
        throw new ServiceError(ErrorCode.BAD_REQUEST, 'Verify your e-mail before authorizing by e-mail');
      if (!user.phone_number && body.authorization_channel === 'OLD_MOBILE')
        throw new ServiceError(ErrorCode.BAD_REQUEST, 'There is no current mobile to authorize from');
      const now = clock.now();
      // The owner's code goes to the caller's own number or address; the new number is someone else's until proven.
      await withinSendLimits(db, config, ids, [number], now);
      const made = await createPhoneChange(
        db,
        ids.organizationId,
        {
          user_id: ids.userId,
          account_id: account.id,
          old_phone_number: user.phone_number ?? '',
          new_phone_number: number,
          authorization_channel: body.authorization_channel,
        },
        now,
      );
      // An open change answers only the same request again; one for another number or channel is
      // refused naming the open change (our choice where the spec is silent: answering the open one
      // for another number would leave the new number without its code, and the client unaware).
      if (
        !made.created &&
        (made.row.new_phone_number !== number || made.row.authorization_channel !== body.authorization_channel)
      ) {
        ctx.set('Location', phoneChangeUrl(publicBaseUrl(ctx, config), made.row.id));
        throw new ServiceError(
          ErrorCode.CONFLICT,
          `Mobile-number change ${made.row.id} is open (${made.row.status}) for another number or channel: finish it, ` +
            'or ask again once it has ended (a step not completed in time ends it REJECTED EXPIRED)',
        );
      }
      await answerStarted(
        ctx,
        made,
        {
          start: (changeId) => workflows.startPhoneChange({ changeId, ...ids }),
          drop: (id) => dropInitializingPhoneChange(db, ids.organizationId, id),
        },
        (row) => changeView(publicBaseUrl(ctx, config), row),
      );
    },
  });
}

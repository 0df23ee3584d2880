import { NOTICE_LANGUAGE, verificationRules } from '../../domain/kyc/requirements';
import { z } from 'zod';
import {
  createApplication,
  findActiveApplication,
  findApplication,
  type KycApplicationRow,
  recordRequirementsRead,
} from '../../db/kyc/applications';
import { findCallerUser } from '../../db/kyc/subjects';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { negotiateProviderApiVersion, sentProviderApiVersions } from '../../domain/kyc/provider-version';
import { statusView } from '../../domain/kyc/status';
import { Permission } from '../../domain/rbac';
import { supportedDocuments } from '../../providers/kyc/supported-documents';
import type { UserCaller } from '../auth/caller';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute, deprecatedAlias, type RouteAuth } from '../route';

export const ApplicationStatus = z
  .object({
    id: z.uuid(),
    status: z.string().meta({ description: 'DRAFT, ID_VERIFICATION_PENDING, APPROVED, REJECTED or EXPIRED' }),
    can_submit: z.boolean(),
    needs_review: z.boolean(),
    message: z.string(),
  })
  .meta({ id: 'KycApplicationStatus' });

const Requirements = z
  .object({
    requires_selfie: z.boolean(),
    requires_liveness: z.boolean(),
    requires_document: z.boolean(),
    min_liveness_images: z.number().int(),
    max_liveness_images: z.number().int(),
    requires_consent: z.boolean(),
    consent_notice: z.object({ language: z.string(), privacy_policy_url: z.string() }),
    missing_applicant_fields: z.array(z.string()),
    supported_documents: z.array(
      z.object({
        country: z.string(),
        id_types: z.array(z.object({ code: z.string(), label: z.string(), has_back: z.boolean() })),
      }),
    ),
  })
  .meta({ id: 'VerificationRequirements' });

export const ApplicationPath = z.object({ id: z.uuid() });
export const VersionsHeader = z.object({
  'x-provider-api-versions': z
    .string()
    .max(200)
    .optional()
    .meta({
      description:
        'Provider API versions the client can run, comma-separated (e.g. "v2, v3"), in any order. Newest common wins; v2 when ' +
        'omitted, empty or none is known. Send the same values to GET and POST verification (compared as a set).',
    }),
});

/** KYC routes are the applicant's own: backend bearer, kyc.write, waiting list allowed. */
export const APPLICANT: RouteAuth = { schemes: ['user'], permission: Permission.KYC_WRITE };

/**
 * The caller's own application. Another user's, or another organization's, is 404: its
 * existence is not for the caller to learn.
 */
export async function ownApplication(deps: Needs<'db'>, caller: UserCaller, id: string): Promise<KycApplicationRow> {
  return callersOwn(await findApplication(deps.db, caller.organizationId, id), caller);
}

/** The row when it is the caller's own application; 404 otherwise. */
export function callersOwn<T extends { user_id: string }>(application: T | undefined, caller: UserCaller): T {
  if (!application || application.user_id !== caller.userId)
    throw new ServiceError(ErrorCode.NOT_FOUND, 'No such KYC application');
  return application;
}

/** The 404 of every route that reads one of the caller's applications. */
export const NO_SUCH_APPLICATION = "no such KYC application of the caller (another user's or organization's included)";

const APPLICANT_FIELDS = ['name', 'phone_number'] as const;

export function kycApplicationRoutes(
  deps: Needs<
    'db' | 'clock',
    | 'KYC_CONSENT_REQUIRED'
    | 'KYC_LIVENESS_MAX_IMAGES'
    | 'KYC_LIVENESS_MIN_IMAGES'
    | 'KYC_MAX_RESUBMISSIONS'
    | 'KYC_PRIVACY_POLICY_URL'
  >,
): AnyRoute[] {
  const { config, db, clock } = deps;
  const view = (application: KycApplicationRow) => statusView(application, clock.now(), config.KYC_MAX_RESUBMISSIONS);
  const requirements = defineRoute({
    method: 'get',
    path: '/v1/kyc/applications/{id}/verification',
    operationId: 'getVerificationRequirements',
    summary: 'What a verification submission needs, for the provider API version the client can run',
    description:
      'Side-effect free on the status. Records the X-Provider-Api-Versions values sent (and the version they negotiate): a ' +
      'POST verification sent different values (compared as a set: order, spaces, case and repeats aside; no header is ' +
      'no values) is rejected, even when both negotiate the same version. The latest GET counts. Supersedes the older GET ' +
      'capture form.',
    tags: ['kyc'],
    auth: APPLICANT,
    request: { params: ApplicationPath, headers: VersionsHeader },
    responses: { 200: { description: 'Verification requirements', schema: Requirements } },
    errors: { NOT_FOUND: NO_SUCH_APPLICATION },
    async handler(ctx, { params, headers }) {
      const caller = ctx.state.caller as UserCaller;
      const application = await ownApplication(deps, caller, params.id);
      const version = negotiateProviderApiVersion(headers['x-provider-api-versions']);
      const sentVersions = sentProviderApiVersions(headers['x-provider-api-versions']);
      if (application.negotiated_api_version !== version || application.sent_api_versions !== sentVersions)
        await recordRequirementsRead(db, caller.organizationId, application.id, { version, sentVersions });
      const user = await findCallerUser(db, caller.userId);
      const rules = verificationRules(version, {
        minLiveness: config.KYC_LIVENESS_MIN_IMAGES,
        maxLiveness: config.KYC_LIVENESS_MAX_IMAGES,
        consentRequired: config.KYC_CONSENT_REQUIRED,
      });
      ctx.body = {
        requires_selfie: true,
        requires_liveness: rules.requiresLiveness,
        requires_document: true,
        min_liveness_images: rules.minLiveness,
        max_liveness_images: rules.maxLiveness,
        requires_consent: rules.requiresConsent,
        consent_notice: { language: NOTICE_LANGUAGE, privacy_policy_url: config.KYC_PRIVACY_POLICY_URL },
        missing_applicant_fields: APPLICANT_FIELDS.filter((field) => !user?.[field]).map((field) =>
          field === 'phone_number' ? 'phone' : field,
        ),
        supported_documents: supportedDocuments(version),
      };
    },
  });
  return [
    defineRoute({
      method: 'post',
      path: '/v1/kyc/applications',
      operationId: 'createKycApplication',
      summary: "Create the caller's DRAFT KYC application",
      description:
        'Not shown in the spec. One active (DRAFT or ID_VERIFICATION_PENDING) application per user: a second gets 409.',
      tags: ['kyc'],
      extension: true,
      auth: APPLICANT,
      responses: { 201: { description: 'The new application', schema: ApplicationStatus } },
      errors: { CONFLICT: 'the user already has an active (DRAFT or ID_VERIFICATION_PENDING) application' },
      async handler(ctx) {
        const caller = ctx.state.caller as UserCaller;
        const created = await createApplication(db, caller.organizationId, caller.userId);
        if (!created) {
          const active = await findActiveApplication(db, caller.organizationId, caller.userId);
          throw new ServiceError(
            ErrorCode.CONFLICT,
            `The user already has an active KYC application${active ? ` (${active.id})` : ''}`,
          );
        }
        ctx.status = 201;
        ctx.set('Location', `/v1/kyc/applications/${created.id}/status`);
        ctx.body = view(created);
      },
    }),
    requirements,
    deprecatedAlias(requirements, {
      path: '/v1/kyc/applications/{id}/verification/capture',
      operationId: 'getCaptureRequirements',
      summary: 'Verification requirements (the older GET capture form)',
    }),
  ];
}

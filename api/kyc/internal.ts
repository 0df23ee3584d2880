import { z } from 'zod';
import { findLatestApplication } from '../../db/kyc/applications';
import { findDocuments } from '../../db/kyc/documents';
import { findProvisionedSubject } from '../../db/kyc/provisioned';
import {
  findSubject,
  findUser,
  findUserOrganization,
  type KycSubjectRow,
  type KycUserRow,
} from '../../db/kyc/subjects';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { KycStatus } from '../../domain/kyc/status';
import { allows, Permission, Scope } from '../../domain/rbac';
import type { Caller } from '../auth/caller';
import { actingOrganization } from '../auth/policy';
import type { Needs } from '../deps';
import type { KycWorkflows } from './workflows';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { isoOrNull as iso } from '../../domain/iso';

/** Backend user tokens or API keys (organization or platform), as spec 4.2 says for these lookups. */
const INTERNAL: RouteAuth = { schemes: ['user', 'api_key'] };
const LOOKUP_FORBIDDEN =
  'organization_id passed by a caller other than a platform API key, or neither the user themself nor kyc.read for the organization';
/** An organization id as a query parameter: the organizations table's ids are short text. */
const OrganizationId = z.string().min(1).max(255);
/** The internal lookups' organization_id (spec 4.2, 5.6). */
const LookupOrganizationId = OrganizationId.optional().meta({
  description:
    "Optional, and only for a platform API key: without it the user's own organization is read; passed, it must be the " +
    "user's organization (404 otherwise). Any other caller acts for the organization of its credentials and gets 403 for passing it.",
});
const NO_APPLICATION = 'The user has no KYC application';
const NO_SUBJECT = 'No provisioned KYC subject for this user';

const Subject = z
  .object({
    type: z.string(),
    id: z.string(),
    phone: z.string().nullable(),
    organization_user_id: z.string(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    id_number: z.string().nullable(),
    date_of_birth: z.string().nullable(),
    gender: z.string().nullable(),
    identity_type: z.string().nullable(),
  })
  .meta({ id: 'KycSubject' });

const InternalStatus = z
  .object({
    user_id: z.uuid(),
    organization_id: z.string(),
    application_id: z.uuid(),
    status: z.string(),
    user_type: z.string(),
    merchant_type: z.string().nullable(),
    verification_result: z.string().meta({ description: 'PENDING (draft or pending), PASSED, FAILED or EXPIRED' }),
    verification_reason_code: z.string().nullable(),
    verification_reason: z.string().nullable(),
    resubmission_count: z.number().int(),
    reapply_blocked_until: z.string().nullable(),
    verification_completed_at: z.string().nullable(),
    submitted_at: z.string().nullable(),
    updated_at: z.string(),
    subject: Subject.nullable(),
  })
  .meta({ id: 'InternalKycStatus' });

const SubjectDetails = z
  .object({
    user_id: z.uuid(),
    organization_id: z.string(),
    application_id: z.uuid().meta({ description: "The user's latest KYC application, APPROVED" }),
    subject: Subject,
    documents: z
      .array(
        z.object({ kind: z.string(), position: z.number().int(), content_type: z.string(), image_base64: z.string() }),
      )
      .meta({ description: 'Every image of that application: DOCUMENT_FRONT, DOCUMENT_BACK, SELFIE, LIVENESS frames' }),
  })
  .meta({ id: 'KycSubjectDetails' });

const RESULT: Record<KycStatus, string> = {
  DRAFT: 'PENDING',
  ID_VERIFICATION_PENDING: 'PENDING',
  APPROVED: 'PASSED',
  REJECTED: 'FAILED',
  EXPIRED: 'EXPIRED',
};

const forbidden = () => new ServiceError(ErrorCode.FORBIDDEN, 'Missing permission kyc.read for this organization');

function subjectView(user: KycUserRow, subject: KycSubjectRow) {
  return {
    type: subject.type,
    id: subject.id,
    phone: subject.phone ?? user.phone_number ?? null,
    organization_user_id: user.id,
    name: subject.name ?? user.name ?? null,
    email: subject.email ?? user.email ?? null,
    id_number: subject.id_number ?? null,
    date_of_birth: subject.date_of_birth,
    gender: subject.gender ?? null,
    identity_type: subject.identity_type ?? null,
  };
}

/** Internal KYC lookups (spec 4.2), served under both /v1/internal/kyc and /api/internal/kyc. */
export function kycInternalRoutes(deps: Needs<'db'>): AnyRoute[] {
  const { db } = deps;

  /**
   * The organization a lookup reads, and the check that the caller may read this user's KYC
   * (spec 4.2, 5.6). Every caller but a platform API key acts for the organization of its
   * credentials (organization_id: 403) and is the user themself or holds kyc.read there. A
   * platform API key holding kyc.read at PLATFORM scope may read any organization, so the user id
   * determines the one read: the user's own organization; organization_id, when passed, must be
   * it, or the answer is `notFound` as for a user nobody knows (no other tenant's row is read).
   */
  async function lookupOrganization(
    caller: Caller,
    requested: string | undefined,
    userId: string,
    notFound: string,
  ): Promise<string> {
    if (caller.organizationId !== null) {
      const organizationId = actingOrganization(caller, requested);
      const self = caller.scheme === 'user' && caller.userId === userId;
      if (!self && !allows(caller.grants, Permission.KYC_READ, caller.organizationId, organizationId))
        throw forbidden();
      return organizationId;
    }
    // A platform API key: organization_id is its to pass (403 without a PLATFORM-scoped grant), and optional.
    if (requested !== undefined) actingOrganization(caller, requested);
    if (!caller.grants.some((g) => g.permission === Permission.KYC_READ && g.scope === Scope.PLATFORM))
      throw forbidden();
    const organizationId = await findUserOrganization(db, userId);
    if (!organizationId || (requested !== undefined && requested !== organizationId))
      throw new ServiceError(ErrorCode.NOT_FOUND, notFound);
    return organizationId;
  }

  async function subjectOf(organizationId: string, userId: string) {
    const [user, subject] = await Promise.all([
      findUser(db, organizationId, userId),
      findSubject(db, organizationId, userId),
    ]);
    return user && subject ? subjectView(user, subject) : undefined;
  }

  return ['/v1/internal/kyc', '/api/internal/kyc'].flatMap((prefix): AnyRoute[] => {
    const cluster = prefix.startsWith('/api');
    return [
      defineRoute({
        method: 'get',
        path: `${prefix}/status`,
        operationId: cluster ? 'getInternalKycStatusClusterLocal' : 'getInternalKycStatus',
        summary: `Internal KYC status of a user${cluster ? ' (cluster-local prefix)' : ''}`,
        description:
          "organization_id is optional and honoured only for a platform API key: without it the user's own organization is " +
          "read; passed, it must be the user's organization (404 otherwise, never another organization's data). Any other " +
          'caller acts for the organization of its credentials and gets 403 for passing it; it is the user themself or holds ' +
          'kyc.read for that organization.',
        tags: ['kyc internal'],
        auth: INTERNAL,
        request: { query: z.strictObject({ user_id: z.uuid(), organization_id: LookupOrganizationId }) },
        responses: { 200: { description: 'Status', schema: InternalStatus } },
        errors: {
          NOT_FOUND:
            "the user has no KYC application in the organization (for a platform API key: no such user, or organization_id is not the user's organization)",
          FORBIDDEN: LOOKUP_FORBIDDEN,
        },
        async handler(ctx, { query }) {
          const caller = ctx.state.caller as Caller;
          const organizationId = await lookupOrganization(caller, query.organization_id, query.user_id, NO_APPLICATION);
          const application = await findLatestApplication(db, organizationId, query.user_id);
          if (!application) throw new ServiceError(ErrorCode.NOT_FOUND, NO_APPLICATION);
          const subject = await subjectOf(organizationId, query.user_id);
          ctx.body = {
            user_id: query.user_id,
            organization_id: organizationId,
            application_id: application.id,
            status: application.status,
            user_type: subject?.type === 'merchant' ? 'MERCHANT' : 'INDIVIDUAL',
            merchant_type: subject?.type === 'merchant' ? 'SOLE_PROPRIETOR' : null,
            verification_result: RESULT[application.status as KycStatus] ?? 'PENDING',
            verification_reason_code: application.result_code,
            verification_reason: application.reason,
            resubmission_count: application.resubmission_count,
            reapply_blocked_until: iso(application.reapply_blocked_until),
            verification_completed_at: iso(application.verification_completed_at),
            submitted_at: iso(application.submitted_at),
            updated_at: iso(application.updated_at),
            subject: subject ?? null,
          };
        },
      }),
      defineRoute({
        method: 'get',
        path: `${prefix}/subjects/{user_id}`,
        operationId: cluster ? 'getKycSubjectDetailsClusterLocal' : 'getKycSubjectDetails',
        summary: `Full identity and documents of a KYC subject, images inline as base64${cluster ? ' (cluster-local prefix)' : ''}`,
        description:
          'For a bank onboarding during current-account self-activation. 404 until the user has a provisioned subject, as ' +
          "current-account activation defines it: the user's latest KYC application APPROVED, and a complete identity (a name " +
          'of at least two words, a date of birth, an ID card, alien card or passport with its number, the user’s mobile ' +
          "number, and the application's images of the document's front, its back (not for a passport) and a selfie). A " +
          'verification still pending is 404 whatever it submitted. organization_id as for the status lookup.',
        tags: ['kyc internal'],
        auth: INTERNAL,
        request: {
          params: z.object({ user_id: z.uuid() }),
          query: z.strictObject({ organization_id: LookupOrganizationId }),
        },
        responses: { 200: { description: 'Subject details', schema: SubjectDetails } },
        errors: {
          NOT_FOUND:
            "the user has no provisioned KYC subject yet (the error's description names what is missing), or, for a platform API key, no such user or organization_id is not the user's organization",
          FORBIDDEN: LOOKUP_FORBIDDEN,
        },
        async handler(ctx, { params, query }) {
          const caller = ctx.state.caller as Caller;
          const organizationId = await lookupOrganization(caller, query.organization_id, params.user_id, NO_SUBJECT);
          const provisioned = await findProvisionedSubject(db, organizationId, params.user_id);
          if ('missing' in provisioned)
            throw new ServiceError(ErrorCode.NOT_FOUND, `${NO_SUBJECT} (${provisioned.missing} missing)`);
          const documents = await findDocuments(db, organizationId, provisioned.application.id);
          ctx.body = {
            user_id: params.user_id,
            organization_id: organizationId,
            application_id: provisioned.application.id,
            subject: subjectView(provisioned.user, provisioned.subject),
            documents: documents.map((d) => ({
              kind: d.kind,
              position: d.position,
              content_type: d.content_type,
              image_base64: d.content.toString('base64'),
            })),
          };
        },
      }),
    ];
  });
}

const SweepResultSchema = z
  .object({
    job: z.literal('KYC_STALE_SESSION_EXPIRY'),
    organization_id: z.string(),
    started_at: z.string(),
    finished_at: z.string(),
    result: z.object({
      scanned: z.number().int(),
      expired: z.number().int(),
      completed: z.number().int(),
      still_pending: z.number().int(),
      failed: z.number().int(),
    }),
  })
  .meta({ id: 'ExpirySweepResult' });

/**
 * The operator-triggered expiry sweep for the caller's organization (spec 4.2): backend user
 * token with accounts.write at ORG scope (own organization) or PLATFORM scope; the organization
 * comes from the token and organization_id is refused (403). It follows the same interval as the
 * schedule: within the window it answers the last sweep's result.
 */
export function expirySweepRoutes(workflows: KycWorkflows): AnyRoute[] {
  return ['/v1/internal/kyc', '/api/internal/kyc'].map((prefix) =>
    defineRoute({
      method: 'post',
      path: `${prefix}/applications/expirations`,
      operationId: prefix.startsWith('/api') ? 'runKycExpirySweepClusterLocal' : 'runKycExpirySweep',
      summary: 'Run the stale-session expiry sweep for the caller organization',
      tags: ['kyc internal'],
      auth: { schemes: ['user'], permission: Permission.ACCOUNTS_WRITE },
      request: {
        query: z.strictObject({
          organization_id: OrganizationId.optional().meta({
            description: 'Refused: the organization comes from the token.',
          }),
        }),
      },
      responses: { 200: { description: 'Sweep result', schema: SweepResultSchema } },
      errors: { FORBIDDEN: 'organization_id passed (the organization comes from the token)' },
      async handler(ctx, { query }) {
        const organizationId = actingOrganization(ctx.state.caller as Caller, query.organization_id);
        ctx.body = await workflows.runExpirySweep(organizationId);
      },
    }),
  );
}

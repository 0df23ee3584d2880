import { z } from 'zod';
import type { HotReads } from '../../db/kyc/hot-reads';
import type { KycApplicationRow } from '../../db/kyc/applications';
import { beginSubmission, providerJobHeldElsewhere, type Submission, undoSubmission } from '../../db/kyc/verification';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { KycStatus, statusView } from '../../domain/kyc/status';
import { V3_JOB_ID } from '../../providers/kyc/client';
import type { KycVerificationInput } from '../../workflows/kyc/messages';
import type { UserCaller } from '../auth/caller';
import type { Needs } from '../deps';
import { KycSubCode } from './images';
import type { KycWorkflows } from './workflows';
import { type AnyRoute, defineRoute, deprecatedAlias } from '../route';
import { pinVersion, requireApplicantName, ServerUpload, submissionChecks } from './submission';
import {
  APPLICANT,
  ApplicationPath,
  ApplicationStatus,
  callersOwn,
  NO_SUCH_APPLICATION,
  ownApplication,
  VersionsHeader,
} from './applications';

const ProviderSdk = z.strictObject({
  channel: z
    .enum(['provider_sdk', 'web_sdk'])
    .meta({ description: 'web_sdk is the legacy name of provider_sdk (deprecated).' }),
  consent: z.boolean().optional(),
});
const VerificationRequest = z
  .discriminatedUnion('channel', [ServerUpload, ProviderSdk])
  .meta({ id: 'VerificationRequest' });

const ProviderSession = z
  .object({
    application_id: z.uuid(),
    provider: z.string(),
    config: z.record(z.string(), z.unknown()).meta({
      description:
        'token (the SDK session token, also at network.config.token for the mobile SDKs), api_version, job_id, user_id',
    }),
  })
  .meta({ id: 'ProviderSession' });

/**
 * Set by the capture alias (spec 4.2: "a lone selfie gets only the passive check"): a lone selfie
 * is taken whatever version the header negotiates. v3's enhanced document verification takes no
 * job without 6 to 8 liveness frames, so a lone selfie's job runs on v2, the generation with the
 * passive check, and stays there (its api_version is v2); it is still held to every other rule of
 * the version negotiated (v3's consent and face image types). The unified POST keeps the
 * version's own requirements (spec 8: frames bounded by the requirements GET verification answers).
 */
const LONE_SELFIE_PASSIVE = 'loneSelfiePassive';

/** The capture alias: the server_upload fields without the channel (a liveness selfie, frames, ID front and back). */
const Capture = ServerUpload.omit({ channel: true }).meta({ id: 'CaptureRequest' });
const Session = z.strictObject({ consent: z.boolean().optional() }).optional();

const ReportJobId = z.strictObject({ provider_job_id: z.string().min(1).max(100) }).meta({ id: 'ReportProviderJobId' });

const SUBMITTED = { description: 'Submitted (server_upload)', schema: ApplicationStatus };
const SESSION_CREATED = { description: 'Provider session (provider_sdk, web_sdk)', schema: ProviderSession };

type VerificationDeps = Needs<
  'db' | 'clock',
  | 'KYC_CALLBACK_WAIT'
  | 'KYC_CONSENT_REQUIRED'
  | 'KYC_LIVENESS_MAX_IMAGES'
  | 'KYC_LIVENESS_MIN_IMAGES'
  | 'KYC_MAX_IMAGE_BYTES'
  | 'KYC_MAX_RESUBMISSIONS'
  | 'KYC_PARTNER_ID'
  | 'KYC_PROVIDER_NAME'
  | 'KYC_STATUS_RECOVERY_TIMEOUT'
  | 'KYC_STATUS_STALE_AFTER'
>;

/** The application as the status shape, at the moment of asking. */
const statusOf = (deps: VerificationDeps) => (application: Parameters<typeof statusView>[0]) =>
  statusView(application, deps.clock.now(), deps.config.KYC_MAX_RESUBMISSIONS);

export function kycVerificationRoutes(deps: VerificationDeps, workflows: KycWorkflows, hotReads: HotReads): AnyRoute[] {
  const verify = startVerificationRoute(deps, workflows, hotReads);
  return [
    verify,
    deprecatedAlias(verify, {
      path: '/v1/kyc/applications/{id}/verification/capture',
      operationId: 'captureVerification',
      summary: 'Server-side capture (deprecated alias of the server_upload channel)',
      request: { params: ApplicationPath, headers: VersionsHeader, body: Capture },
      responses: { 202: SUBMITTED },
      toSuccessorInput: (input) => ({ ...input, body: { ...input.body, channel: 'server_upload' as const } }),
      state: { [LONE_SELFIE_PASSIVE]: true },
    }),
    deprecatedAlias(verify, {
      path: '/v1/kyc/applications/{id}/verification/session',
      operationId: 'createVerificationSession',
      summary: 'Provider SDK session (deprecated alias of the provider_sdk channel)',
      request: { params: ApplicationPath, headers: VersionsHeader, body: Session },
      responses: { 201: SESSION_CREATED },
      toSuccessorInput: (input) => ({
        ...input,
        body: { consent: input.body?.consent, channel: 'provider_sdk' as const },
      }),
    }),
    providerJobRoute(deps, workflows),
    statusRoute(deps, workflows, hotReads),
  ];
}

/** POST verification: a server upload submitted to the provider, or a provider SDK session. */
function startVerificationRoute(deps: VerificationDeps, workflows: KycWorkflows, hotReads: HotReads) {
  const { config, db, clock } = deps;
  const view = statusOf(deps);

  /** Moves the application to ID_VERIFICATION_PENDING for a new job, with its stored images; 409 when it cannot take one. */
  async function submit(application: KycApplicationRow, submission: Submission): Promise<KycApplicationRow> {
    const updated = await beginSubmission(db, application.organization_id, application, submission, clock.now());
    if (!updated) throw new ServiceError(ErrorCode.CONFLICT, 'The application cannot take a submission now');
    hotReads.forget(application.id);
    return updated;
  }

  /** Puts the application back as it was when its workflow could not be started. */
  async function unsubmit(application: KycApplicationRow): Promise<void> {
    await undoSubmission(db, application.organization_id, application, clock.now());
    hotReads.forget(application.id);
  }
  const { rulesFor, validateServerUpload } = submissionChecks(config);

  return defineRoute({
    method: 'post',
    path: '/v1/kyc/applications/{id}/verification',
    operationId: 'startVerification',
    summary:
      'Start identity verification (server_upload: 202 status; provider_sdk or legacy web_sdk: 201 provider session)',
    description:
      "server_upload submits the selfie and ID to the provider's enhanced document verification (job type 11) and answers 202 " +
      'with the status shape. provider_sdk mints a provider SDK session and answers 201. Either leaves the application in ' +
      'ID_VERIFICATION_PENDING; the result arrives later through the provider callback. X-Provider-Api-Versions must carry ' +
      'the values GET verification was last sent, as a set (order, spaces, case and repeats aside; no header is no values), ' +
      'or the capture is rejected (400, VERSION_MISMATCH on header.x-provider-api-versions). Without a GET before it, the ' +
      'POST negotiates on its own.',
    tags: ['kyc'],
    auth: APPLICANT,
    bodyLimit: 'verification',
    // The legacy web_sdk channel is announced deprecated on its answers (provider_sdk succeeds it).
    deprecation: { when: (body) => (body as { channel?: unknown } | undefined)?.channel === 'web_sdk' },
    request: { params: ApplicationPath, headers: VersionsHeader, body: VerificationRequest },
    errors: {
      NOT_FOUND: NO_SUCH_APPLICATION,
      CONFLICT: 'the application cannot take a submission now (pending, approved, or blocked from reapplying)',
      INVALID_PARAMS:
        'an image that is not base64 JPEG or PNG or is too large, an unsupported document, missing consent, a liveness frame count out of range, or X-Provider-Api-Versions values differing from those sent to the GET',
    },
    responses: {
      202: SUBMITTED,
      201: SESSION_CREATED,
    },
    async handler(ctx, { params, headers, body }) {
      const caller = ctx.state.caller as UserCaller;
      const application = await ownApplication(deps, caller, params.id);
      const negotiated = pinVersion(application, headers['x-provider-api-versions']);
      const lone = body.channel === 'server_upload' && (body.liveness_images?.length ?? 0) === 0;
      const apiVersion = lone && ctx.state[LONE_SELFIE_PASSIVE] === true && negotiated === 'v3' ? 'v2' : negotiated;
      if (!view(application).can_submit)
        throw new ServiceError(
          ErrorCode.CONFLICT,
          `The application is ${application.status} and cannot take a submission`,
        );
      if (body.channel === 'server_upload') {
        const images = validateServerUpload(body, negotiated, apiVersion === negotiated ? undefined : apiVersion);
        if (apiVersion === 'v3') await requireApplicantName(db, caller, body.name);
        const pending = await submit(application, {
          channel: 'server_upload',
          apiVersion,
          documents: images,
          subject: {
            country: body.country,
            identity_type: body.id_type,
            id_number: body.id_number ?? null,
            date_of_birth: body.date_of_birth ?? null,
            // Only v3 sends the name with the document; a v2 job uses the name on file.
            ...(apiVersion === 'v3' && body.name && { name: body.name }),
          },
        });
        const input: KycVerificationInput = {
          organizationId: caller.organizationId,
          applicationId: application.id,
          channel: 'server_upload',
          callbackWaitMs: config.KYC_CALLBACK_WAIT,
        };
        await workflows.startServerUpload(input, caller.userId).catch(async (error) => {
          await unsubmit(application);
          throw error;
        });
        ctx.status = 202;
        ctx.body = view(pending);
        return;
      }
      if (rulesFor(apiVersion).requiresConsent && body.consent === false) {
        throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
          { path: 'body.consent', reason: 'the applicant must consent', sub_code: KycSubCode.CONSENT_REQUIRED },
        ]);
      }
      const pending = await submit(application, { channel: body.channel, apiVersion });
      const input: KycVerificationInput = {
        organizationId: caller.organizationId,
        applicationId: application.id,
        channel: 'provider_sdk',
        callbackWaitMs: config.KYC_CALLBACK_WAIT,
      };
      const session = await workflows.startProviderSdk(input, caller.userId).catch(async (error) => {
        await unsubmit(application);
        throw error;
      });
      ctx.status = 201;
      ctx.body = {
        application_id: application.id,
        provider: config.KYC_PROVIDER_NAME,
        config: {
          token: session.token,
          api_version: session.apiVersion,
          partner_id: config.KYC_PARTNER_ID,
          job_id: pending.job_id,
          user_id: pending.user_id,
          product: 'enhanced_document_verification',
        },
      };
    },
  });
}

/** PATCH verification/provider-job: the provider's own job id of a provider_sdk verification, write-once. */
function providerJobRoute(deps: VerificationDeps, workflows: KycWorkflows) {
  const { db } = deps;
  return defineRoute({
    method: 'patch',
    path: '/v1/kyc/applications/{id}/verification/provider-job',
    operationId: 'reportProviderJobId',
    summary: "Report the provider's own job id of a provider_sdk verification",
    description:
      'Call once, right after the SDK reports a successful submission. Write-once: the same id again succeeds unchanged; a ' +
      'different id gets 409; valid only while the verification is ID_VERIFICATION_PENDING (409 otherwise).',
    tags: ['kyc'],
    auth: APPLICANT,
    request: { params: ApplicationPath, body: ReportJobId },
    errors: {
      NOT_FOUND: NO_SUCH_APPLICATION,
      CONFLICT:
        'a different provider job id is already recorded, the job belongs to another application, or the verification is not pending',
      INVALID_PARAMS: 'on v3, a job id that is not a TypeID (job_ and 26 lower-case base32 characters)',
    },
    responses: {
      200: {
        description: 'Recorded',
        schema: z.object({ application_id: z.uuid(), provider_job_id: z.string() }).meta({ id: 'ProviderJobId' }),
      },
    },
    async handler(ctx, { params, body }) {
      const caller = ctx.state.caller as UserCaller;
      const application = await ownApplication(deps, caller, params.id);
      if (application.status !== KycStatus.ID_VERIFICATION_PENDING) {
        throw new ServiceError(ErrorCode.CONFLICT, 'The verification is not pending');
      }
      if (application.provider_job_id && application.provider_job_id !== body.provider_job_id) {
        throw new ServiceError(ErrorCode.CONFLICT, 'A different provider job id is already recorded');
      }
      if (application.api_version === 'v3' && !V3_JOB_ID.test(body.provider_job_id))
        throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
          {
            path: 'body.provider_job_id',
            reason: 'a v3 job id is job_ followed by 26 lower-case base32 characters',
            sub_code: SubCode.INVALID_FORMAT,
          },
        ]);
      // A job is one application's: reporting another's (to be verified on it) is refused.
      if (await providerJobHeldElsewhere(db, body.provider_job_id, application.id))
        throw new ServiceError(ErrorCode.CONFLICT, 'The provider job belongs to another application');
      const outcome = await workflows.reportProviderJobId(application.id, body.provider_job_id);
      if (!outcome.ok) {
        throw new ServiceError(
          ErrorCode.CONFLICT,
          outcome.reason === 'DIFFERENT_JOB_ID'
            ? 'A different provider job id is already recorded'
            : 'The verification is not pending',
        );
      }
      ctx.body = { application_id: application.id, provider_job_id: body.provider_job_id };
    },
  });
}

/** GET status: the application's status, recovered from the provider first when stale. */
function statusRoute(deps: VerificationDeps, workflows: KycWorkflows, hotReads: HotReads) {
  const { config, clock } = deps;
  const view = statusOf(deps);
  return defineRoute({
    method: 'get',
    path: '/v1/kyc/applications/{id}/status',
    operationId: 'getKycApplicationStatus',
    summary: 'The application status; stale provider state is recovered before answering',
    description:
      'When a pending verification has not heard from the provider for KYC_STATUS_STALE_AFTER, the provider is asked first ' +
      '(bounded by KYC_STATUS_RECOVERY_TIMEOUT). When the provider does not answer in time, the answer is what is known.',
    tags: ['kyc'],
    auth: APPLICANT,
    request: { params: ApplicationPath },
    responses: { 200: { description: 'Status', schema: ApplicationStatus } },
    errors: { NOT_FOUND: NO_SUCH_APPLICATION },
    async handler(ctx, { params }) {
      const caller = ctx.state.caller as UserCaller;
      let application = callersOwn(await hotReads.kycApplicationStatus(caller.organizationId, params.id), caller);
      const lastHeard = application.provider_checked_at ?? application.submitted_at;
      const stale =
        application.status === KycStatus.ID_VERIFICATION_PENDING &&
        (!lastHeard || clock.now().getTime() - lastHeard.getTime() > config.KYC_STATUS_STALE_AFTER);
      if (stale) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<false>(
          (resolve) => (timer = setTimeout(() => resolve(false), config.KYC_STATUS_RECOVERY_TIMEOUT)),
        );
        const recovered = await Promise.race([workflows.refreshStatus(application.id).catch(() => false), timeout]);
        clearTimeout(timer);
        if (recovered)
          application =
            (await hotReads.kycApplicationStatus(caller.organizationId, application.id, { fresh: true })) ??
            application;
      }
      ctx.body = view(application);
    },
  });
}

import { ApplicationFailure, Context } from '@temporalio/activity';
import { findApplication, type KycApplicationRow } from '../../db/kyc/applications';
import { findDocumentContents } from '../../db/kyc/documents';
import { findSubject, findUser } from '../../db/kyc/subjects';
import { setProviderJobIdOnce, updateApplication, type VerificationNotes } from '../../db/kyc/verification';
import { NOTICE_LANGUAGE } from '../../domain/kyc/requirements';
import { KycStatus } from '../../domain/kyc/status';
import { Failure } from '../../domain/failures';
import { type JobStatus, KycProviderError } from '../../providers/kyc/client';
import { isApplicantsJob } from '../../domain/kyc/jobs';
import type { ApplicationRef, ProviderStatus } from '../../workflows/kyc/messages';
import type { Needs } from '../deps';

/** Provider errors that another attempt cannot fix end the activity's retries. */
function providerFailure(error: unknown): never {
  if (error instanceof KycProviderError && !error.retryable) {
    throw ApplicationFailure.nonRetryable(error.message, Failure.PROVIDER_REJECTED_REQUEST);
  }
  throw error;
}

export function createVerificationActivities(
  deps: Needs<'db' | 'providers' | 'clock', 'KYC_PRIVACY_POLICY_URL' | 'PUBLIC_BASE_URL'>,
) {
  const { db, providers, config, clock } = deps;
  const callbackUrl = (version: string) => `${config.PUBLIC_BASE_URL}/v1/kyc/provider-callbacks/${version}`;

  async function load(ref: ApplicationRef): Promise<KycApplicationRow> {
    const application = await findApplication(db, ref.organizationId, ref.applicationId);
    if (!application)
      throw ApplicationFailure.nonRetryable(`no KYC application ${ref.applicationId}`, Failure.NOT_FOUND);
    return application;
  }
  const update = (ref: ApplicationRef, notes: VerificationNotes) =>
    updateApplication(db, ref.organizationId, ref.applicationId, notes, clock.now());

  return {
    /**
     * Submits the stored images for enhanced document verification (job type 11). Never
     * creates a second provider job: the attempt is recorded first, and a retry after an
     * attempt asks the provider (v2, by our job id) or gives up (v3) instead of submitting again.
     */
    async submitDocumentVerification(ref: ApplicationRef): Promise<{ providerJobId: string | null }> {
      const application = await load(ref);
      if (application.provider_job_id) return { providerJobId: application.provider_job_id };
      const version = application.api_version ?? 'v2';
      if (application.submission_attempted_at) {
        if (version === 'v3') {
          throw ApplicationFailure.nonRetryable(
            'an earlier v3 submission may have reached the provider',
            Failure.SUBMISSION_INDETERMINATE,
          );
        }
        const known = await providers.kyc
          .jobStatus({ apiVersion: 'v2', jobId: application.job_id!, userId: application.user_id })
          .catch(providerFailure);
        if (known.state !== 'not_found')
          return { providerJobId: known.state === 'final' ? (known.providerJobId ?? null) : null };
      }
      await update(ref, { submission_attempted_at: clock.now() });
      const documents = await findDocumentContents(db, ref.organizationId, ref.applicationId);
      const one = (kind: string) => documents.find((d) => d.kind === kind)?.content;
      const subject = await findSubject(db, ref.organizationId, application.user_id);
      // The subject's stated identity first, the user's profile where the subject says nothing.
      const user = await findUser(db, ref.organizationId, application.user_id);
      const submitted = await providers.kyc
        .submitDocumentVerification({
          apiVersion: version,
          jobId: application.job_id!,
          userId: application.user_id,
          country: subject?.country ?? 'KE',
          idType: subject?.identity_type ?? 'IDENTITY_CARD',
          idNumber: subject?.id_number ?? undefined,
          retry: application.submission_attempted_at !== null,
          applicant: {
            name: subject?.name ?? user?.name ?? undefined,
            email: subject?.email ?? user?.email ?? undefined,
            phone: subject?.phone ?? user?.phone_number ?? undefined,
          },
          // Consent is given with the submission (the API refuses one without it where required).
          consent: {
            granted: true,
            grantedAt: application.submitted_at ?? clock.now(),
            noticeLanguage: NOTICE_LANGUAGE,
            privacyPolicyUrl: config.KYC_PRIVACY_POLICY_URL,
          },
          callbackUrl: callbackUrl(version),
          images: {
            selfie: one('SELFIE')!,
            documentFront: one('DOCUMENT_FRONT')!,
            documentBack: one('DOCUMENT_BACK'),
            livenessImages: documents.filter((d) => d.kind === 'LIVENESS').map((d) => d.content),
          },
        })
        .catch(providerFailure);
      await update(ref, { provider_job_id: submitted.providerJobId });
      return { providerJobId: submitted.providerJobId };
    },

    /** A provider SDK session token for the application's job. */
    async createSdkSession(ref: ApplicationRef): Promise<{ token: string; apiVersion: string }> {
      const application = await load(ref);
      const version = application.api_version ?? 'v2';
      const session = await providers.kyc
        .createSdkSession({
          apiVersion: version,
          jobId: application.job_id!,
          userId: application.user_id,
          callbackUrl: callbackUrl(version),
        })
        .catch(providerFailure);
      return { token: session.token, apiVersion: version };
    },

    /**
     * Where the provider stands on the application's job (a signed lookup for v2). A v3 job
     * whose id no one reported is looked up by the id a signed v3 callback named, and that id
     * is recorded only when the lookup finds the job.
     */
    async checkProviderStatus(ref: ApplicationRef, providerJobIdHint?: string): Promise<ProviderStatus> {
      const application = await load(ref);
      if (application.status !== KycStatus.ID_VERIFICATION_PENDING) return { state: 'closed' };
      const asked = application.provider_job_id ?? providerJobIdHint;
      let status: JobStatus;
      try {
        status = await providers.kyc.jobStatus({
          apiVersion: application.api_version ?? 'v2',
          jobId: application.job_id!,
          userId: application.user_id,
          providerJobId: asked,
        });
      } catch (error) {
        // A job id only a callback named (unsigned) that the provider refuses is no job of ours:
        // it must not end the run.
        if (!application.provider_job_id && providerJobIdHint && error instanceof KycProviderError && !error.retryable)
          return { state: 'not_found' };
        return providerFailure(error);
      }
      await update(ref, { provider_checked_at: clock.now() });
      if (status.state !== 'final') return { state: status.state };
      if (!isApplicantsJob(status, application, asked)) {
        Context.current().log.warn('KYC provider job is not the applicant’s; ignored', {
          applicationId: ref.applicationId,
        });
        return { state: 'not_found' };
      }
      const providerJobId = status.providerJobId ?? application.provider_job_id ?? undefined;
      if (providerJobId && !application.provider_job_id)
        await setProviderJobIdOnce(db, ref.organizationId, ref.applicationId, providerJobId, clock.now());
      return {
        state: 'final',
        category: status.category,
        resultCode: status.resultCode,
        resultText: status.resultText,
        isFinal: status.isFinal,
        providerJobId,
      };
    },
  };
}

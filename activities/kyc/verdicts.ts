import { ApplicationFailure, Context } from '@temporalio/activity';
import { findApplication, type KycApplicationRow } from '../../db/kyc/applications';
import {
  completePendingApplication,
  failPendingApplication,
  setProviderJobIdOnce,
  updateApplication,
} from '../../db/kyc/verification';
import { Failure } from '../../domain/failures';
import { categoryOf, ResultCategory } from '../../domain/kyc/result-codes';
import { KycStatus } from '../../domain/kyc/status';
import type { ApplicationRef } from '../../workflows/kyc/messages';
import type { Needs } from '../deps';

/**
 * What a verification run records on its application: the provider's job id, a review, the
 * verdict (conditional on the application still pending) or a submission that cannot go on.
 */
export function createVerdictActivities(deps: Needs<'db' | 'clock', 'KYC_MAX_RESUBMISSIONS' | 'KYC_REAPPLY_BLOCK'>) {
  const { db, config, clock } = deps;

  async function load(ref: ApplicationRef): Promise<KycApplicationRow> {
    const application = await findApplication(db, ref.organizationId, ref.applicationId);
    if (!application)
      throw ApplicationFailure.nonRetryable(`no KYC application ${ref.applicationId}`, Failure.NOT_FOUND);
    return application;
  }

  return {
    async recordProviderJobId(ref: ApplicationRef & { providerJobId: string }): Promise<void> {
      if (!(await setProviderJobIdOnce(db, ref.organizationId, ref.applicationId, ref.providerJobId, clock.now())))
        Context.current().log.warn('reported KYC provider job is held by another application; not recorded', {
          applicationId: ref.applicationId,
        });
    },

    async recordReview(ref: ApplicationRef): Promise<void> {
      await updateApplication(db, ref.organizationId, ref.applicationId, { needs_review: true }, clock.now());
    },

    /**
     * Completes a pending application from a confirmed provider verdict. Conditional on the
     * status, so completing twice (a replayed activity, the sweep racing) changes nothing.
     */
    async completeVerification(
      ref: ApplicationRef & { resultCode: string; resultText: string; category?: ResultCategory },
    ): Promise<{ status: KycStatus }> {
      const application = await load(ref);
      if (application.status !== KycStatus.ID_VERIFICATION_PENDING) return { status: application.status };
      // Runs started before v3 verdicts came as statuses hand over a v2 code without its category.
      const approved = (ref.category ?? categoryOf(ref.resultCode)) === ResultCategory.APPROVED;
      const exhausted = !approved && application.resubmission_count >= config.KYC_MAX_RESUBMISSIONS;
      const status = approved ? KycStatus.APPROVED : KycStatus.REJECTED;
      const now = clock.now();
      await completePendingApplication(
        db,
        ref.organizationId,
        ref.applicationId,
        {
          status,
          outcome: approved ? 'PASS' : 'FAIL',
          resultCode: ref.resultCode,
          reason: ref.resultText,
          reapplyBlockedUntil: exhausted ? new Date(now.getTime() + config.KYC_REAPPLY_BLOCK) : null,
        },
        now,
      );
      Context.current().log.info('KYC verification completed', { applicationId: ref.applicationId, status });
      return { status };
    },

    /** A submission that cannot go on: the application is rejected with the reason, and may be submitted again. */
    async failSubmission(ref: ApplicationRef & { reason: string }): Promise<void> {
      await failPendingApplication(db, ref.organizationId, ref.applicationId, ref.reason, clock.now());
    },
  };
}

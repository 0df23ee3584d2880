import { createExpirySweepActivities } from './expiry-sweep';
import { createVerdictActivities } from './verdicts';
import { createVerificationActivities } from './verification';

/** The KYC area's activities: a verification's provider steps and records, and the expiry sweep's. */
export function createKycActivities(
  deps: Parameters<typeof createVerificationActivities>[0] &
    Parameters<typeof createVerdictActivities>[0] &
    Parameters<typeof createExpirySweepActivities>[0],
) {
  return {
    ...createVerificationActivities(deps),
    ...createVerdictActivities(deps),
    ...createExpirySweepActivities(deps),
  };
}

import { createExpirySweepActivities } from './expiry-sweep';
import { createVerificationActivities } from './verification';

/** The KYC area's activities: a verification's steps and the expiry sweep's. */
export function createKycActivities(
  deps: Parameters<typeof createVerificationActivities>[0] & Parameters<typeof createExpirySweepActivities>[0],
) {
  return { ...createVerificationActivities(deps), ...createExpirySweepActivities(deps) };
}

import type { ActivityDeps } from '../deps';
import { createExpirySweepActivities } from './expiry-sweep';
import { createVerificationActivities } from './verification';

/** The KYC area's activities: a verification's steps and the expiry sweep's. */
export function createKycActivities(deps: ActivityDeps) {
  return { ...createVerificationActivities(deps), ...createExpirySweepActivities(deps) };
}

import type { ActivityDeps } from '../deps';
import { createCallbackActivities } from './callback-retention';
import { createIdempotencyPurgeActivities } from './idempotency-purge';

/** The platform's housekeeping activities: stored callbacks and idempotency keys past retention. */
export function createPlatformActivities(deps: Pick<ActivityDeps, 'db' | 'clock'>) {
  return { ...createCallbackActivities(deps), ...createIdempotencyPurgeActivities(deps) };
}

import type { Needs } from '../deps';
import { createCallbackRetentionActivities } from './callback-retention';
import { createIdempotencyPurgeActivities } from './idempotency-purge';

/** The platform's housekeeping activities: stored callbacks and idempotency keys past retention. */
export function createPlatformActivities(deps: Needs<'db' | 'clock'>) {
  return { ...createCallbackRetentionActivities(deps), ...createIdempotencyPurgeActivities(deps) };
}

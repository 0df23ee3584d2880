import { proxyActivities } from '@temporalio/workflow';
import type { PlatformActivities } from '../../activities';

const { purgeExpiredIdempotencyKeys } = proxyActivities<PlatformActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumInterval: '1 minute' },
});

/**
 * One run of the `idempotency-key-purge` schedule: deletes the Idempotency-Keys past their
 * IDEMPOTENCY_KEY_TTL (they already count as absent). Idempotent: an overlapping or retried run
 * deletes what is left.
 */
export async function idempotencyKeyPurge(): Promise<{ purged: number }> {
  return { purged: await purgeExpiredIdempotencyKeys() };
}

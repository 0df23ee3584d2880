import { proxyActivities } from '@temporalio/workflow';
import type { PlatformActivities } from '../../activities';
import type { CallbackRetentionInput } from './messages';

const { purgeExpiredCallbacks } = proxyActivities<PlatformActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumInterval: '1 minute' },
});

/**
 * One run of the `callback-retention` schedule: deletes the raw provider callbacks (mobile
 * money and KYC) older than the retention, in batches. Deleting is idempotent: a retried or
 * overlapping run deletes what is left.
 */
export async function callbackRetention(input: CallbackRetentionInput): Promise<{ purged: number }> {
  return { purged: await purgeExpiredCallbacks(input.retentionMs) };
}

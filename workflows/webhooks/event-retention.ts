import { proxyActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities';
import type { WebhookEventRetentionInput } from './messages';

const { purgeExpiredWebhookEvents } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumInterval: '1 minute' },
});

/**
 * One run of the `webhook-event-retention` schedule: deletes the events older than the
 * retention whose deliveries are all over (their deliveries and attempts go with them), in
 * batches. Deleting is idempotent: a retried or overlapping run deletes what is left.
 */
export async function webhookEventRetention(input: WebhookEventRetentionInput): Promise<{ purged: number }> {
  return { purged: await purgeExpiredWebhookEvents(input.retentionMs) };
}

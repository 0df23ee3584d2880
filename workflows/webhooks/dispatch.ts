import { proxyActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities';
import type { WebhookDispatchInput } from './messages';

/**
 * One run of the `webhook-dispatch` schedule: listens for committed events and starts their
 * deliveries for `listenMs`; the schedule starts the next run as this one ends. A worker lost
 * mid-run is noticed by the heartbeat and the step resumes elsewhere, taking what waited.
 */
export async function webhookDispatch(input: WebhookDispatchInput): Promise<{ events: number; started: number }> {
  const { dispatchWebhookEvents } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: input.listenMs + 60_000,
    heartbeatTimeout: '20 seconds',
    retry: { maximumInterval: '10 seconds' },
  });
  return dispatchWebhookEvents(input.listenMs);
}

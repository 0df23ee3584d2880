import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities';
import { WebhookFailure, type WebhookDeliveryInput, type WebhookDeliveryResult } from './messages';

/**
 * One event to one endpoint (`webhook-delivery/<event id>/<endpoint id>`): the attempt is an
 * activity retried with backoff (a 429's Retry-After sets its next wait) until a 2xx, a refusal,
 * or the retry window's end; then the delivery is marked FAILED with why. Starting the workflow
 * again with its id (the API's resend, or the Temporal UI) sends the same event, same webhook-id.
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const { retry } = input;
  const { attemptWebhookDelivery } = proxyActivities<WebhookActivities>({
    taskQueue: input.activityTaskQueue,
    startToCloseTimeout: retry.attemptMs,
    scheduleToCloseTimeout: retry.windowMs,
    retry: {
      initialInterval: retry.initialMs,
      backoffCoefficient: 2,
      maximumInterval: retry.maximumMs,
      nonRetryableErrorTypes: Object.values(WebhookFailure),
    },
  });
  const { failWebhookDelivery } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumInterval: '1 minute' },
  });
  try {
    await attemptWebhookDelivery(input);
    return { status: 'SUCCEEDED' };
  } catch (error) {
    const reason = reasonOf(error);
    await failWebhookDelivery(input, reason);
    return { status: 'FAILED', reason };
  }
}

function reasonOf(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof TimeoutFailure) return 'no 2xx answer within the retry window';
  if (cause instanceof ApplicationFailure) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

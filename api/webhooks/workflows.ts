import type { Client } from '@temporalio/client';
import type { Config } from '../../config';
import type { webhookDelivery } from '../../workflows/webhooks/delivery';
import { webhookDeliveryStart, webhookRetryOf, webhookTaskQueue } from '../../workflows/webhooks/messages';

/**
 * The one module through which the API drives webhook deliveries: a resend starts the
 * delivery's run again under its id, now: after the last run closed (ALLOW_DUPLICATE), or in
 * place of one still waiting out its backoff (TERMINATE_EXISTING), so a resend never waits. An
 * attempt of the replaced run already under way may still arrive: under the same webhook-id,
 * which receivers drop duplicates by; its outcome is not recorded (its generation is past).
 */
export function webhookWorkflows(
  temporal: Client,
  config: Pick<
    Config,
    | 'TEMPORAL_TASK_QUEUE'
    | 'WEBHOOK_TASK_QUEUE'
    | 'WEBHOOK_RETRY_INITIAL'
    | 'WEBHOOK_RETRY_MAX_INTERVAL'
    | 'WEBHOOK_RETRY_WINDOW'
    | 'WEBHOOK_TIMEOUT'
  >,
) {
  const retry = webhookRetryOf(config);
  const activityTaskQueue = webhookTaskQueue(config);
  return {
    async resend(delivery: {
      organizationId: string;
      deliveryId: string;
      generation: number;
      eventId: string;
      endpointId: string;
    }): Promise<void> {
      await temporal.workflow.start<typeof webhookDelivery>('webhookDelivery', {
        ...webhookDeliveryStart({ ...delivery, activityTaskQueue, retry }, config.TEMPORAL_TASK_QUEUE),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
    },
  };
}
export type WebhookWorkflows = ReturnType<typeof webhookWorkflows>;

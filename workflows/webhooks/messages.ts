/** What the webhook workflows share with the API (resends) and the dispatcher's activity (starts). */
import { workflowIds } from '../ids';
import { OrganizationId } from '../search-attributes';

/** How a delivery is retried: from the configuration of whoever starts it (workflows read none). */
export interface WebhookRetry {
  initialMs: number;
  maximumMs: number;
  /** How long it is retried in all before it ends FAILED. */
  windowMs: number;
  /** One attempt's deadline (the receiver's timeout plus the step's own work). */
  attemptMs: number;
}

export interface WebhookDeliveryInput {
  /** Where its attempts run: the webhook worker's own queue (see worker/worker.ts). */
  activityTaskQueue: string;
  organizationId: string;
  deliveryId: string;
  /** The delivery's generation (resends count up): only its run may end it. */
  generation: number;
  eventId: string;
  endpointId: string;
  retry: WebhookRetry;
}

export type WebhookDeliveryResult = { status: 'SUCCEEDED' } | { status: 'FAILED'; reason: string };

export interface WebhookEventRetentionInput {
  /** Events that occurred longer ago than this are deleted (none of their deliveries PENDING). */
  retentionMs: number;
}

export interface WebhookDispatchInput {
  /** How long this run listens for committed events (its schedule's interval). */
  listenMs: number;
}

/** Failure types of a delivery attempt that end it at once: the verdicts' own (one spelling). */
export { WebhookFailure } from '../../domain/webhooks/verdicts';

/** The retry of deliveries, from the webhook settings (the dispatcher and the API's resends read the same). */
export function webhookRetryOf(config: {
  WEBHOOK_RETRY_INITIAL: number;
  WEBHOOK_RETRY_MAX_INTERVAL: number;
  WEBHOOK_RETRY_WINDOW: number;
  WEBHOOK_TIMEOUT: number;
}): WebhookRetry {
  return {
    initialMs: config.WEBHOOK_RETRY_INITIAL,
    maximumMs: config.WEBHOOK_RETRY_MAX_INTERVAL,
    windowMs: config.WEBHOOK_RETRY_WINDOW,
    attemptMs: config.WEBHOOK_TIMEOUT + 15_000,
  };
}

/** The task queue of webhook attempts: WEBHOOK_TASK_QUEUE, or the service's with `-webhooks`. */
export const webhookTaskQueue = (config: { WEBHOOK_TASK_QUEUE?: string; TEMPORAL_TASK_QUEUE: string }) =>
  config.WEBHOOK_TASK_QUEUE ?? `${config.TEMPORAL_TASK_QUEUE}-webhooks`;

/** How a delivery's run is started (by the dispatcher, or a resend): its id, input and search attributes. */
export function webhookDeliveryStart(input: WebhookDeliveryInput, taskQueue: string) {
  return {
    taskQueue,
    workflowId: workflowIds.webhookDelivery(input.eventId, input.endpointId),
    args: [input] as [WebhookDeliveryInput],
    typedSearchAttributes: [{ key: OrganizationId, value: input.organizationId }],
  };
}

import type { Needs } from '../deps';
import { createWebhookDeliveryActivities } from './delivery';
import { createWebhookDispatchActivities } from './dispatch';
import { createEventRetentionActivities } from './event-retention';

type WebhookDeps = Parameters<typeof createWebhookDeliveryActivities>[0] &
  Parameters<typeof createWebhookDispatchActivities>[0];

/** Outbound webhooks: the outbox's relay, each delivery's attempts, and the events' retention. */
export function createWebhookActivities(deps: WebhookDeps & Needs<'db' | 'clock'>) {
  return {
    ...createWebhookDispatchActivities(deps),
    ...createWebhookDeliveryActivities(deps),
    ...createEventRetentionActivities(deps),
  };
}

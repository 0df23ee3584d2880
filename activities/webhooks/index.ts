import type { Needs } from '../deps';
import { createWebhookDeliveryActivities } from './delivery';
import { createWebhookDispatchActivities } from './dispatch';

type WebhookDeps = Parameters<typeof createWebhookDeliveryActivities>[0] &
  Parameters<typeof createWebhookDispatchActivities>[0];

/** Outbound webhooks: the outbox's relay and each delivery's attempts. */
export function createWebhookActivities(deps: WebhookDeps & Needs<'db'>) {
  return { ...createWebhookDispatchActivities(deps), ...createWebhookDeliveryActivities(deps) };
}

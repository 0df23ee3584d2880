import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { insertEndpoint, listEndpoints, updateEndpoint } from '../db/webhooks/endpoints';
import { EVENT_TYPES } from '../domain/webhooks/events';
import { newSecret } from '../providers/webhooks/signature';
import type { RunningWebhookReceiver } from '../simulators/webhook-receiver';

/** The receiver's name for the demo organization: events arrive at `<receiver>/webhooks/demo`. */
export const DEMO_RECEIVER = 'demo';
const DESCRIPTION = 'npm start: the webhook receiver simulator';

/**
 * Registers the receiver simulator as a webhook endpoint of the organization (every event type),
 * or points the one registered at a previous start at this start's receiver, and tells the
 * receiver its secret so it verifies what arrives.
 */
export async function registerDevelopmentReceiver(
  db: Knex,
  organizationId: string,
  receiver: RunningWebhookReceiver,
  now: Date,
): Promise<string> {
  const url = `${receiver.url}/webhooks/${DEMO_RECEIVER}`;
  const existing = (await listEndpoints(db, organizationId)).find((e) => e.description === DESCRIPTION);
  const endpoint = existing
    ? await updateEndpoint(db, organizationId, existing.id, { url, event_types: EVENT_TYPES }, now)
    : await insertEndpoint(
        db,
        organizationId,
        {
          id: randomUUID(),
          url,
          description: DESCRIPTION,
          event_types: EVENT_TYPES,
          enabled: true,
          secret: newSecret(),
        },
        Number.MAX_SAFE_INTEGER,
      );
  if (!endpoint) throw new Error('the development webhook endpoint could not be registered');
  receiver.register(DEMO_RECEIVER, [endpoint.secret, ...(endpoint.previous_secret ? [endpoint.previous_secret] : [])]);
  return url;
}

import { purgeWebhookEvents } from '../../db/webhooks/event-retention';
import type { Needs } from '../deps';
import { purgeInBatches } from '../purge';

/**
 * The step of the webhook event retention run (workflows/webhooks/event-retention.ts): it
 * deletes the events older than the retention period, a batch at a time.
 */

/** How many events one delete removes. Each event's deliveries and attempts go with it, so small batches keep each statement short. */
const PURGE_BATCH = 500;

export function createEventRetentionActivities(deps: Needs<'db' | 'clock'>) {
  return {
    /** Deletes the events past `retentionMs` whose deliveries are over, batch by batch; how many went. */
    async purgeExpiredWebhookEvents(retentionMs: number): Promise<number> {
      const cutoff = new Date(deps.clock.now().getTime() - retentionMs);
      return purgeInBatches(() => purgeWebhookEvents(deps.db, cutoff, PURGE_BATCH));
    },
  };
}

import { purgeWebhookEvents } from '../../db/webhooks/event-retention';
import type { Needs } from '../deps';
import { purgeInBatches } from '../purge';

/** Events per delete: short statements (each event's deliveries and attempts go too). */
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

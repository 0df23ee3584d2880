import { purgeCallbacks } from '../../db/platform/callback-retention';
import type { Needs } from '../deps';
import { purgeInBatches } from '../purge';

/** Rows per delete: short statements, so the purge never holds the tables for long. */
const PURGE_BATCH = 1_000;

export function createCallbackRetentionActivities(deps: Needs<'db' | 'clock'>) {
  return {
    /** Deletes raw callbacks received more than `retentionMs` ago, batch by batch; how many went. */
    async purgeExpiredCallbacks(retentionMs: number): Promise<number> {
      const cutoff = new Date(deps.clock.now().getTime() - retentionMs);
      return purgeInBatches(() => purgeCallbacks(deps.db, cutoff, PURGE_BATCH));
    },
  };
}

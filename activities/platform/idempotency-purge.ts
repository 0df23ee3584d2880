import { Context } from '@temporalio/activity';
import { purgeExpiredKeys } from '../../db/idempotency/keys';
import type { Needs } from '../deps';

/** Rows per delete: short statements; a large backlog is worked off batch by batch. */
const PURGE_BATCH = 1_000;

export function createIdempotencyPurgeActivities(deps: Needs<'db' | 'clock'>) {
  return {
    /** Deletes every Idempotency-Key past its expiry, batch by batch; how many went. */
    async purgeExpiredIdempotencyKeys(): Promise<number> {
      let total = 0;
      for (;;) {
        const purged = await purgeExpiredKeys(deps.db, deps.clock.now(), PURGE_BATCH);
        total += purged;
        Context.current().heartbeat(total);
        if (purged < PURGE_BATCH) return total;
      }
    },
  };
}

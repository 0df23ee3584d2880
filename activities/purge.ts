import { Context } from '@temporalio/activity';

/**
 * A retention purge's loop, in an activity: `purgeBatch` (one short delete, how many rows went)
 * again until one deletes nothing, the running total as the heartbeat; how many went in all.
 */
export async function purgeInBatches(purgeBatch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const purged = await purgeBatch();
    total += purged;
    Context.current().heartbeat(total);
    if (purged === 0) return total;
  }
}

import type { Knex } from 'knex';

/**
 * Raw provider callbacks past their retention, for the callback-retention schedule. Platform-wide:
 * a retention applies to every organization alike.
 */
/** Deletes callbacks received before `cutoff`, oldest first, at most `limit` rows of each table; how many went. */
export async function purgeCallbacks(db: Knex, cutoff: Date, limit: number): Promise<number> {
  let purged = 0;
  for (const table of ['mobile_money_callbacks', 'kyc_callback_events']) {
    const result = await db.raw(
      `delete from ${table} where id in (select id from ${table} where received_at < ? order by received_at limit ?)`,
      [cutoff, limit],
    );
    purged += result.rowCount ?? 0;
  }
  return purged;
}

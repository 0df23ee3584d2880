import type { Knex } from 'knex';

/**
 * Raw provider callbacks past their retention, for the callback-retention schedule, and the
 * payout status queries (their URL tokens) asked as long ago: their payouts are final long
 * before (SEND_MONEY_RESULT_WAIT), so a Result to one is late; without its row it is refused 404.
 * Platform-wide: a retention applies to every organization alike.
 */
const PURGED = [
  ['mobile_money_callbacks', 'received_at'],
  ['kyc_callback_events', 'received_at'],
  ['payout_status_queries', 'asked_at'],
] as const;

/** Deletes rows from before `cutoff`, oldest first, at most `limit` rows of each table; how many went. */
export async function purgeCallbacks(db: Knex, cutoff: Date, limit: number): Promise<number> {
  let purged = 0;
  for (const [table, at] of PURGED) {
    const result = await db.raw(
      `delete from ${table} where id in (select id from ${table} where ${at} < ? order by ${at} limit ?)`,
      [cutoff, limit],
    );
    purged += result.rowCount ?? 0;
  }
  return purged;
}

import type { Knex } from 'knex';

/**
 * The rate-limit budgets' shared counts (the unlogged `rate_limits` table: a key, the points
 * spent in its window, the window's end in epoch ms). Platform-wide: keys name their caller,
 * organization or address. Every API instance adds its spending here and reads the others'.
 */
export interface StoredCount {
  points: number;
  /** The window's end, epoch ms. */
  expire: number;
}

/**
 * Adds each key's points to its window (a new window of `windowMs` from `nowMs` when the last
 * one is over), every key in one statement; each key's count and window end after. Keys are
 * taken in order, so two instances writing overlapping keys lock them in the same order.
 */
export async function addPoints(
  db: Knex,
  spent: ReadonlyMap<string, number>,
  windowMs: number,
  nowMs: number,
): Promise<Map<string, StoredCount>> {
  const keys = [...spent.keys()].sort();
  const { rows } = await db.raw<{ rows: { key: string; points: number; expire: string }[] }>(
    `insert into rate_limits (key, points, expire)
     select s.key, s.points, ?::bigint from unnest(?::varchar[], ?::integer[]) as s(key, points) order by s.key
     on conflict (key) do update set
       points = case when rate_limits.expire <= ?::bigint then excluded.points else rate_limits.points + excluded.points end,
       expire = case when rate_limits.expire <= ?::bigint then excluded.expire else rate_limits.expire end
     returning key, points, expire`,
    [nowMs + windowMs, keys, keys.map((key) => spent.get(key)!), nowMs, nowMs],
  );
  return new Map(rows.map((row) => [row.key, { points: row.points, expire: Number(row.expire) }]));
}

/** A key's count in its current window; undefined when it has none (never spent, or its window is over). */
export async function readPoints(db: Knex, key: string, nowMs: number): Promise<StoredCount | undefined> {
  const row = await db('rate_limits').where({ key }).where('expire', '>', nowMs).first('points', 'expire');
  return row ? { points: row.points, expire: Number(row.expire) } : undefined;
}

/**
 * Deletes counts whose window ended before `beforeMs`, at most `limit` at a time, until none is
 * left; how many went. Without it every key ever seen (each source address, each caller) would
 * keep its row.
 */
export async function deleteExpired(db: Knex, beforeMs: number, limit: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db.raw(
      'delete from rate_limits where key in (select key from rate_limits where expire < ? limit ?)',
      [beforeMs, limit],
    );
    deleted += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < limit) return deleted;
  }
}

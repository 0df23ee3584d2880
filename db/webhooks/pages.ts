import type { Knex } from 'knex';

/**
 * A keyset page of `q`, newest first by (`column`, id): `size` rows after the position `after`
 * (the last row of the previous page), and whether more follow.
 */
export async function newestFirst<T>(
  q: Knex.QueryBuilder,
  column: string,
  size: number,
  after?: { at: Date; id: string },
): Promise<{ rows: T[]; more: boolean }> {
  if (after) q.whereRaw(`(??, id) < (?, ?)`, [column, after.at, after.id]);
  const rows = (await q
    .orderBy([
      { column, order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(size + 1)
    .select('*')) as T[];
  return { rows: rows.slice(0, size), more: rows.length > size };
}

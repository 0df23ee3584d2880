import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

interface PgConnection {
  query(config: { name: string; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] }>;
}

/** Statement names by text: a query has a few shapes (its filters present or not), never unbounded. */
const names = new Map<string, string>();
const MAX_SHAPES = 1_000;

/**
 * Runs a query built with knex as a named prepared statement on one of knex's own connections.
 * knex sends every query unnamed, so Postgres plans it on every call; a named statement is
 * planned once per connection (then a generic plan, once Postgres finds it no worse). For hot
 * reads whose planning costs as much as their execution, and whose best plan does not hang on
 * the values (a search pattern does: leave those to knex). The name is the text's digest, so
 * each shape of the query is prepared once per connection. Within a transaction, pass it as `db`:
 * its client's connection is the transaction's.
 */
export async function preparedRows<T>(db: Knex | Knex.Transaction, query: Knex.QueryBuilder | Knex.Raw): Promise<T[]> {
  const { sql, bindings } = query.toSQL().toNative();
  let name = names.get(sql);
  if (name === undefined) {
    name = `k${createHash('sha256').update(sql).digest('base64url').slice(0, 24)}`;
    if (names.size < MAX_SHAPES) names.set(sql, name);
  }
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    return (await connection.query({ name, text: sql, values: bindings })).rows as T[];
  } finally {
    await db.client.releaseConnection(connection);
  }
}

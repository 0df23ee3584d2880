import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import type { KycStatusRow } from './applications';

type CachedStatus = KycStatusRow & { organization_id: string };

/** The application_name of the connection that listens for status changes (operators find it in pg_stat_activity). */
export const STATUS_LISTENER_NAME = 'lending-service-status-changes';

/**
 * Reads on the hottest paths (clients polling GET status), through pg directly with named
 * prepared statements: knex's query building and pool bookkeeping cost about as much CPU as
 * the query itself there. Same database and credentials as the knex instance; its own small pool.
 *
 * Application statuses are also kept in memory, and each is dropped the moment it changes:
 * Postgres announces every change after commit (migration 20261122070000) on a connection this
 * instance listens on. A status read while a change was announced is not kept (it may be the
 * older one), and while the listening connection is down nothing is kept or served from memory.
 */
export function createHotReads(db: Knex, max: number, options: { cacheSize?: number; cacheTtlMs?: number } = {}) {
  const { connectionString } = (db.client.config as { connection: { connectionString: string } }).connection;
  const pool = new pg.Pool({ connectionString, max, application_name: 'lending-service-hot-reads' });
  pool.on('error', () => {}); // an idle client dropped by the server is replaced on next use

  const cache = new LRUCache<string, CachedStatus>({
    max: options.cacheSize ?? 10_000,
    ttl: options.cacheTtlMs ?? 60_000,
  });
  let listening = false;
  let closed = false;
  /** Moves on every announced change and every loss of the listening connection. */
  let changes = 0;
  let listener: pg.Client | undefined;

  function lost() {
    listening = false;
    changes += 1;
    cache.clear();
    // A late error from the connection being closed must find a listener: unhandled, it would end the process.
    listener?.removeAllListeners().on('error', () => {});
    listener?.end().catch(() => {});
    listener = undefined;
    if (!closed) setTimeout(listen, 1_000).unref();
  }
  async function listen() {
    if (closed) return;
    const client = new pg.Client({ connectionString, application_name: STATUS_LISTENER_NAME });
    listener = client;
    client.on('error', lost);
    client.on('end', () => {
      if (listener === client) lost();
    });
    client.on('notification', (message) => {
      changes += 1;
      if (message.payload) cache.delete(message.payload);
    });
    try {
      await client.connect();
      await client.query('listen kyc_application_changed');
      if (listener === client) listening = true;
    } catch {
      if (listener === client) lost();
    }
  }
  void listen();

  async function readStatus(organizationId: string, id: string): Promise<CachedStatus | undefined> {
    const { rows } = await pool.query<CachedStatus>({
      name: 'kyc-application-status',
      text: `select id, organization_id, user_id, status, needs_review, resubmission_count, reapply_blocked_until, submitted_at, provider_checked_at
               from kyc_applications where organization_id = $1 and id = $2`,
      values: [organizationId, id],
    });
    return rows[0];
  }

  return {
    /** The application's status row; `fresh` reads past memory (right after asking for a change). */
    async kycApplicationStatus(
      organizationId: string,
      id: string,
      options: { fresh?: boolean } = {},
    ): Promise<KycStatusRow | undefined> {
      const kept = options.fresh ? undefined : cache.get(id);
      if (kept) return kept.organization_id === organizationId ? kept : undefined;
      const before = changes;
      const row = await readStatus(organizationId, id);
      if (row && listening && changes === before) cache.set(id, row);
      return row;
    },
    /**
     * Drops what this instance keeps of an application it has just changed itself, so its next
     * read is fresh however late the notification arrives (a client reads its own write), and a
     * read in flight across the change is not kept.
     */
    forget(id: string) {
      changes += 1;
      cache.delete(id);
    },
    async close() {
      closed = true;
      listening = false;
      const client = listener;
      listener = undefined;
      client?.removeAllListeners().on('error', () => {});
      await Promise.all([pool.end(), client?.end().catch(() => {})]);
    },
  };
}
export type HotReads = ReturnType<typeof createHotReads>;

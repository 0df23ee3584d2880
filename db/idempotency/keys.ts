import type { Knex } from 'knex';

/**
 * Idempotency keys (db/migrations/20261122055000_idempotency.ts), shared by every API instance.
 * A key's scope names the caller, the organization it acts for, the method and the route
 * template, so no query here can reach another tenant's keys.
 */
const TABLE = 'idempotency_keys';

export interface KeyRow {
  fingerprint: string;
  state: 'RUNNING' | 'DONE';
  response_status: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
  locked_until: Date;
  expires_at: Date;
}

/**
 * One statement decides who executes: the insert of a fresh row, or (on conflict) the takeover
 * of a row that has expired, or that is RUNNING for the same request with its lock run out.
 * Postgres re-checks the WHERE on the latest row version under its row lock, so of any number
 * of concurrent requests exactly one gets a row back (`inserted` false for a takeover).
 */
export async function acquireKey(
  db: Knex,
  scope: string,
  key: string,
  claim: { fingerprint: string; token: string; now: Date; lockedUntil: Date; expiresAt: Date },
): Promise<{ inserted: boolean } | undefined> {
  const { rows } = await db.raw<{ rows: { inserted: boolean }[] }>(
    `insert into ${TABLE} as k (scope, key, fingerprint, state, lock_token, locked_until, created_at, expires_at)
     values (?, ?, ?, 'RUNNING', ?, ?, ?, ?)
     on conflict (scope, key) do update set
       fingerprint = excluded.fingerprint, state = 'RUNNING', lock_token = excluded.lock_token,
       response_status = null, response_body = null, response_headers = null, locked_until = excluded.locked_until,
       created_at = excluded.created_at, expires_at = excluded.expires_at
     where k.expires_at <= excluded.created_at
        or (k.state = 'RUNNING' and k.locked_until <= excluded.created_at and k.fingerprint = excluded.fingerprint)
     returning (xmax = 0) as inserted`,
    [scope, key, claim.fingerprint, claim.token, claim.lockedUntil, claim.now, claim.expiresAt],
  );
  return rows[0];
}

export function findKey(db: Knex, scope: string, key: string): Promise<KeyRow | undefined> {
  return db(TABLE).where({ scope, key }).first<KeyRow | undefined>();
}

/** Keeps a running execution's key while it works; a no-op once the key is taken over or done. */
export async function renewKey(db: Knex, scope: string, key: string, token: string, lockedUntil: Date): Promise<void> {
  await db(TABLE).where({ scope, key, lock_token: token, state: 'RUNNING' }).update({ locked_until: lockedUntil });
}

/** Forgets the execution's key (it failed, or its answer is not stored): a retry may execute. */
export async function releaseKey(db: Knex, scope: string, key: string, token: string): Promise<void> {
  await db(TABLE).where({ scope, key, lock_token: token }).delete();
}

/** Stores the execution's answer; false when its key was taken over meanwhile. */
export async function storeAnswer(
  db: Knex,
  scope: string,
  key: string,
  token: string,
  answer: { status: number; body: string | null; headers: Record<string, string> },
  now: Date,
): Promise<boolean> {
  const stored = await db(TABLE).where({ scope, key, lock_token: token }).update({
    state: 'DONE',
    response_status: answer.status,
    response_body: answer.body,
    response_headers: answer.headers,
    locked_until: now,
  });
  return stored > 0;
}

/** Deletes up to `limit` keys expired before `now` (skipping rows in use); how many went. Platform-wide: expired keys are nobody's. */
export async function purgeExpiredKeys(db: Knex, now: Date, limit: number): Promise<number> {
  const result = await db.raw<{ rowCount: number }>(
    `delete from ${TABLE} where (scope, key) in (
       select scope, key from ${TABLE} where expires_at < ? order by expires_at limit ? for update skip locked)`,
    [now, limit],
  );
  return result.rowCount;
}

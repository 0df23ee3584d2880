import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import { addPoints, deleteExpired, readPoints, type StoredCount } from '../../db/platform/rate-limits';
import { ErrorCode, ServiceError } from '../../domain/errors';

interface Decision {
  allowed: boolean;
  remaining: number;
  msBeforeReset: number;
}

interface Budget {
  readonly points: number;
  take(key: string): Promise<Decision>;
  /** Whether the key's budget is spent, without spending any of it. */
  spent(key: string): Promise<Decision>;
}

/** Exact counting in this process (RATE_LIMIT_MEMORY: one API instance). */
function memoryBudget(keyPrefix: string, points: number, duration: number): Budget {
  const limiter = new RateLimiterMemory({ keyPrefix, points, duration });
  return {
    points,
    async take(key) {
      try {
        const res = await limiter.consume(key);
        return { allowed: true, remaining: res.remainingPoints, msBeforeReset: res.msBeforeNext };
      } catch (rejection) {
        const res = rejection as { msBeforeNext: number };
        return { allowed: false, remaining: 0, msBeforeReset: res.msBeforeNext };
      }
    },
    async spent(key) {
      const res = await limiter.get(key);
      const used = res?.consumedPoints ?? 0;
      return {
        allowed: used < points,
        remaining: Math.max(0, points - used),
        msBeforeReset: res?.msBeforeNext ?? duration * 1000,
      };
    },
  };
}

interface KeyState {
  /** Points the shared store held at the last sync. */
  consumed: number;
  /** Points this instance spent since then, not yet being written. */
  pending: number;
  /** Points being written to the store now (counted until the store's answer includes them). */
  sending: number;
  resetAt: number;
  syncedAt: number;
  /** The key's read, or the write that carries its points, under way. */
  syncing?: Promise<void>;
}

/** At most one "store unavailable" warning this often (it counts the failures it stands for). */
const UNAVAILABLE_WARNING_EVERY_MS = 10_000;

/**
 * Store keys are printable ASCII that fits the store's varchar(255); any other (a long financing
 * issuer and subject, or one with a NUL or a lone surrogate from a token's claims, which Postgres
 * refuses or changes, failing or mismatching a whole batch) is hashed, over its UTF-16 code units
 * (as UTF-8, two lone surrogates would hash alike).
 */
const storeKey = (key: string) =>
  key.length <= 200 && /^[\x20-\x7e]*$/.test(key)
    ? key
    : `sha256:${createHash('sha256').update(key, 'utf16le').digest('hex')}`;

/** Expired counts are deleted this often, once their window is this long over (as rate-limiter-flexible did). */
const PURGE_EVERY_MS = 5 * 60_000;
const PURGE_AFTER_MS = 60 * 60_000;

/**
 * The budgets' counts shared by every API instance through Postgres (db/platform/rate-limits.ts),
 * with the writes batched: each instance decides from the shared count (never older than
 * RATE_LIMIT_SYNC_INTERVAL) plus what it admitted since, and every interval adds what it spent,
 * every key of every budget in one statement. One instance counts exactly; several can together
 * overshoot a budget by what they admit within one interval. A write per request instead
 * serializes every request of an organization on one row lock (the auth benchmark measured a
 * third of the throughput), and a write per key and interval costs a statement per caller.
 */
function sharedCounts(db: Knex, windowMs: number, syncMs: number, logger: Logger) {
  const keys = new Map<string, KeyState>();
  let flushing: Promise<void> | undefined;

  // One warning per interval while the store is down, not one per key: an outage would otherwise
  // write a line for every caller, organization and address in use, each interval.
  let warnedAt = 0;
  let unwarned = 0;
  const unavailable = (error: unknown) => {
    unwarned += 1;
    if (Date.now() - warnedAt < Math.max(syncMs, UNAVAILABLE_WARNING_EVERY_MS)) return;
    logger.warn({ err: error, failed_syncs: unwarned }, 'rate-limit store unavailable; counting locally');
    warnedAt = Date.now();
    unwarned = 0;
  };
  /** The store's count (none: its window is over or never began) becomes the key's shared view. */
  const adopt = (state: KeyState, stored: StoredCount | undefined) => {
    unwarned = 0; // the store answered: an outage's unreported failures do not ride into the next
    state.consumed = stored?.points ?? 0;
    if (stored) state.resetAt = stored.expire;
    state.syncedAt = Date.now();
  };

  /** Reads the key's shared count (once at a time per key). */
  function read(key: string, state: KeyState): Promise<void> {
    state.syncing ??= (async () => {
      try {
        adopt(state, await readPoints(db, key, Date.now()));
      } catch (error) {
        state.syncedAt = Date.now(); // asked again after an interval, not on every request
        unavailable(error);
      } finally {
        state.syncing = undefined;
      }
    })();
    return state.syncing;
  }

  /** Adds every key's pending points to the store in one statement and adopts the shared counts. */
  async function flush() {
    const now = Date.now();
    const batch = new Map<string, { state: KeyState; window: number }>();
    const spent = new Map<string, number>();
    for (const [key, state] of keys) {
      if (state.syncing) continue; // its read or write is under way: next interval
      if (state.pending > 0) {
        batch.set(key, { state, window: state.resetAt });
        spent.set(key, state.pending);
        state.sending = state.pending;
        state.pending = 0;
      } else if (state.resetAt <= now) keys.delete(key); // idle: forget it
    }
    if (batch.size === 0) return;
    const written = (async () => {
      try {
        const stored = await addPoints(db, spent, windowMs, Date.now());
        // Every key comes back; one that did not would be read again, not taken as zero.
        for (const [key, { state }] of batch) if (stored.has(key)) adopt(state, stored.get(key));
      } catch (error) {
        // Keep counting locally (for the same window only), and try the store again next interval.
        // (A write that committed but whose answer was lost is counted twice: a stricter limit
        // for one window, never a looser one.)
        for (const [key, { state, window }] of batch) {
          if (state.resetAt === window) state.pending += spent.get(key)!;
          state.syncedAt = Date.now();
        }
        unavailable(error);
      } finally {
        for (const { state } of batch.values()) {
          state.sending = 0;
          state.syncing = undefined;
        }
      }
    })();
    for (const { state } of batch.values()) state.syncing = written;
    await written;
  }
  const timer = setInterval(() => {
    flushing ??= flush().finally(() => (flushing = undefined));
  }, syncMs);
  timer.unref();
  const purge = setInterval(() => {
    deleteExpired(db, Date.now() - PURGE_AFTER_MS, 1_000).catch(unavailable);
  }, PURGE_EVERY_MS);
  purge.unref();

  return {
    /** The key's current state, read again when older than one interval; a new window when the last one is over. */
    async current(key: string): Promise<KeyState> {
      let state = keys.get(key);
      if (!state) {
        state = { consumed: 0, pending: 0, sending: 0, resetAt: Date.now() + windowMs, syncedAt: 0 };
        keys.set(key, state);
      }
      // A key new to this instance waits for the shared count once; a view older than one
      // interval is read again before deciding (a key seen now and then costs one read, not a
      // row lock). A busy key's view is kept fresh by the flush's answers: a request that finds
      // its sync under way decides from the local view rather than waiting for the store.
      const stale = Date.now() - state.syncedAt > syncMs;
      if (state.syncedAt === 0 || (stale && !state.syncing)) await read(key, state);
      const now = Date.now();
      if (state.resetAt <= now) {
        // The window is over: what was counted in it no longer matters, written or not; the
        // store starts a new window on the next write.
        state.consumed = 0;
        state.pending = 0;
        state.resetAt = now + windowMs;
      }
      return state;
    },
    /** Writes what is pending and stops syncing. */
    async close() {
      clearInterval(timer);
      clearInterval(purge);
      await flushing;
      // A key whose read is under way is skipped by a flush: its pending points wait for it.
      await Promise.all([...keys.values()].map((state) => state.syncing));
      await flush();
    },
  };
}
type SharedCounts = ReturnType<typeof sharedCounts>;

/** A budget whose counts are shared (see sharedCounts), its keys under `keyPrefix`. */
function sharedBudget(counts: SharedCounts, keyPrefix: string, points: number): Budget {
  const stateOf = (key: string) => counts.current(`${keyPrefix}:${storeKey(key)}`);
  return {
    points,
    async take(key) {
      const state = await stateOf(key);
      const used = state.consumed + state.sending + state.pending;
      const msBeforeReset = state.resetAt - Date.now();
      if (used >= points) return { allowed: false, remaining: 0, msBeforeReset };
      state.pending += 1;
      return { allowed: true, remaining: points - used - 1, msBeforeReset };
    },
    async spent(key) {
      const state = await stateOf(key);
      const used = state.consumed + state.sending + state.pending;
      return {
        allowed: used < points,
        remaining: Math.max(0, points - used),
        msBeforeReset: state.resetAt - Date.now(),
      };
    },
  };
}

/** 429 with Retry-After and the refusing budget's RateLimit-* headers. */
function tooMany(budget: Budget, decision: Decision): ServiceError {
  const retryAfter = String(Math.max(1, Math.ceil(decision.msBeforeReset / 1000)));
  return new ServiceError(ErrorCode.TOO_MANY_REQUESTS, undefined, [], {
    'Retry-After': retryAfter,
    'RateLimit-Limit': String(budget.points),
    'RateLimit-Remaining': '0',
    'RateLimit-Reset': retryAfter,
  });
}

/**
 * Budgets per window: one per caller and one per organization (all its callers together), so
 * one caller's burst cannot exhaust another organization's budget; failed authentications per
 * source address and per target (checked before any verification, so guessing stops rather than
 * merely getting another answer); provider callbacks per source address. 429 answers carry
 * Retry-After; every admitted answer carries the caller budget's RateLimit-* headers.
 */
export function createRateLimiter(
  config: Pick<
    Config,
    | 'RATE_LIMIT_AUTH_FAILURE_POINTS'
    | 'RATE_LIMIT_CALLBACK_POINTS'
    | 'RATE_LIMIT_CALLER_POINTS'
    | 'RATE_LIMIT_MEMORY'
    | 'RATE_LIMIT_ORGANIZATION_POINTS'
    | 'RATE_LIMIT_SYNC_INTERVAL'
    | 'RATE_LIMIT_WINDOW'
  >,
  db: Knex,
  logger: Logger,
) {
  const duration = Math.max(1, Math.round(config.RATE_LIMIT_WINDOW / 1000));
  const counts = config.RATE_LIMIT_MEMORY
    ? undefined
    : sharedCounts(db, duration * 1000, config.RATE_LIMIT_SYNC_INTERVAL, logger);
  const make = (keyPrefix: string, points: number): Budget =>
    counts ? sharedBudget(counts, keyPrefix, points) : memoryBudget(keyPrefix, points, duration);
  const perCaller = make('caller', config.RATE_LIMIT_CALLER_POINTS);
  const perOrganization = make('org', config.RATE_LIMIT_ORGANIZATION_POINTS);
  const authFailures = make('authfail', config.RATE_LIMIT_AUTH_FAILURE_POINTS);
  const callbacks = make('callback', config.RATE_LIMIT_CALLBACK_POINTS);

  return {
    /** Spends one point of the caller's and the organization's budgets, or throws TOO_MANY_REQUESTS. */
    async consume(ctx: Context, callerKey: string, organizationId: string | null): Promise<void> {
      const caller = await perCaller.take(callerKey);
      if (!caller.allowed) throw tooMany(perCaller, caller);
      const organization = organizationId ? await perOrganization.take(organizationId) : undefined;
      if (organization && !organization.allowed) throw tooMany(perOrganization, organization);
      ctx.set('RateLimit-Limit', String(perCaller.points));
      ctx.set('RateLimit-Remaining', String(caller.remaining));
      ctx.set('RateLimit-Reset', String(Math.ceil(caller.msBeforeReset / 1000)));
    },
    /** Before verifying a credential: 429 when its source address or its target has failed too often. */
    async refuseWhileLockedOut(keys: string[]): Promise<void> {
      for (const key of keys) {
        const decision = await authFailures.spent(key);
        if (!decision.allowed) throw tooMany(authFailures, decision);
      }
    },
    /** A credential that failed verification spends its address's and its target's budgets. */
    async countFailedAuthentication(keys: string[]): Promise<void> {
      await Promise.all(keys.map((key) => authFailures.take(key)));
    },
    /** One provider callback from the request's source address, or TOO_MANY_REQUESTS. */
    async consumeCallback(ctx: Context): Promise<void> {
      const decision = await callbacks.take(`ip:${ctx.ip}`);
      if (!decision.allowed) throw tooMany(callbacks, decision);
    },
    async close() {
      await counts?.close(); // every budget's counts (memory budgets have nothing to write)
    },
  };
}
export type RateLimiter = ReturnType<typeof createRateLimiter>;

import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import type { Clock } from '../../domain/clock';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import type { Caller } from '../auth/caller';
import { errorBody, errorFamilyOf, HTTP_STATUS } from '../errors';
import type { AnyRoute } from '../route';
import { acquireKey, findKey, type KeyRow, releaseKey, renewKey, storeAnswer } from '../../db/idempotency/keys';
import { keyWaiters } from './idempotency-waiters';

/**
 * Idempotency-Key (spec 4.3) for the routes declared `idempotent`, backed by one Postgres table
 * (db/migrations/20261122055000_idempotency.ts) so every API instance shares it.
 *
 * - The key is scoped to the caller (and the organization it acts for), the method and the route
 *   template: two callers or two routes never share a key.
 * - The first request inserts the row RUNNING and executes. Its answer, once it executed, is
 *   serialized once and stored as the exact bytes sent, whatever its status (as Stripe does): a
 *   2xx, or a refusal the execution itself reached (400, 404, 409: insufficient funds, nothing
 *   owed, no such account). Anything that is not the execution's verdict deletes the row, so the
 *   client may retry: 401 and 403, 429 (a limit, nothing done), 503 (a dependency down, nothing
 *   left behind), 500 (an unexpected failure; the steps under the key are idempotent anyway).
 *   Validation and authorization run before this, so their refusals are never stored either.
 * - A retry with the same request (fingerprint of the validated path parameters and body) gets
 *   the stored answer byte for byte with `Idempotent-Replayed: true`; another request under the
 *   same key is 409 IDEMPOTENCY_KEY_REUSED. A retry while the first still runs waits for the
 *   first one's answer (IDEMPOTENCY_WAIT at most) and replays it, as the spec says of identical
 *   retries: a client written from the spec reads every 409 as "another body" and would resend
 *   under a new key, a second prompt or payout. Only past the wait is it 409
 *   IDEMPOTENCY_REQUEST_IN_PROGRESS with Retry-After, whose description says to resend the same
 *   request; never a second execution. Should the first fail without an answer to store (its
 *   key released), the waiting retry executes in its place, as it would had it come later.
 * - Concurrency rests on the primary key alone: one INSERT ... ON CONFLICT decides who executes.
 *   A running executor renews its lock; a RUNNING row whose lock has run out belongs to an
 *   executor that died, and the next retry takes it over in that same statement. A row past
 *   `expires_at` counts as absent and is replaced the same way; the idempotency-key-purge
 *   schedule deletes expired rows. The queries are db/idempotency/keys.ts.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** The request-headers schema of an idempotent route: the optional key, at most 255 characters. */
export const IdempotencyKeyHeader = z.object({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .max(IDEMPOTENCY_KEY_MAX_LENGTH)
    .optional()
    .meta({ description: 'At most 255 characters; see the Idempotency-Key section of the document' }),
});
/** Refusals an execution reaches by running (stored like a success); any other error is not stored. */
const EXECUTED_REFUSALS = new Set<ErrorCode>([
  ErrorCode.BAD_REQUEST,
  ErrorCode.INVALID_PARAMS,
  ErrorCode.NOT_FOUND,
  ErrorCode.CONFLICT,
]);
const EXECUTED_STATUSES = new Set([...EXECUTED_REFUSALS].map((code) => HTTP_STATUS[code]));

/** How often a waiting retry reads the key again: soon at first, then every quarter second. */
const FIRST_POLL_MS = 20;
const MAX_POLL_MS = 250;
/** Retries one instance lets wait on one key at once; more are answered 409 in progress at once. */
const MAX_WAITERS = 64;

/**
 * Headers that belong to the answer and are stored and replayed with its body: a replay of an
 * answer carrying a secret (a webhook endpoint's) is as uncacheable as the first.
 */
const STORED_HEADERS = ['Location', 'Cache-Control'];

/** JSON with every object's keys sorted, recursively: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === 'function') return canonicalJson(withJson.toJSON());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .filter((name) => record[name] !== undefined)
    .sort()
    .map((name) => `${JSON.stringify(name)}:${canonicalJson(record[name])}`);
  return `{${members.join(',')}}`;
}

/** What makes two requests under one key "the same": their validated path parameters and body. */
export function fingerprintOf(input: { params?: unknown; body?: unknown }): string {
  return createHash('sha256')
    .update(canonicalJson({ params: input.params ?? null, body: input.body ?? null }))
    .digest('hex');
}

const EXECUTION_ID = 'idempotentExecutionId';

/** A uuid (RFC 9562 version 8: custom) derived from the scope, key and request fingerprint. */
function executionId(scope: string, key: string, fingerprint: string): string {
  const bytes = createHash('sha256')
    .update(JSON.stringify([scope, key, fingerprint]))
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The id for what a request under an Idempotency-Key creates, the same for every execution of
 * that key and request (caller, route, body); undefined without a key. A handler that creates
 * its resource under this id finds its own earlier work when it runs again (the first execution
 * died, or its answer could not be stored) instead of doing it twice.
 */
export function idempotentExecutionId(ctx: Context): string | undefined {
  return ctx.state[EXECUTION_ID] as string | undefined;
}

/** The scope of a key: the caller and the organization it acts for, the method and the route template. */
export function scopeOf(
  caller: Pick<Caller, 'id' | 'organizationId'>,
  route: Pick<AnyRoute, 'method' | 'path'>,
): string {
  return JSON.stringify([caller.id, caller.organizationId, route.method.toUpperCase(), route.path]);
}

function invalidKey(reason: string, subCode: string): ServiceError {
  return new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
    { path: `header.${IDEMPOTENCY_HEADER}`, reason, sub_code: subCode },
  ]);
}

/** The key of a request, undefined without the header; an empty or over-long key is refused. */
function keyOf(ctx: Context): string | undefined {
  const raw = ctx.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(', ') : raw;
  if (key.length === 0) throw invalidKey('must not be empty', SubCode.TOO_SHORT);
  if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH)
    throw invalidKey(`must be at most ${IDEMPOTENCY_KEY_MAX_LENGTH} characters`, SubCode.TOO_LONG);
  return key;
}

/** A body that can be stored and replayed is JSON: a Buffer, stream or string answer cannot be. */
function isStorable(body: unknown): boolean {
  if (body === undefined || body === null) return true;
  if (typeof body !== 'object' || Buffer.isBuffer(body)) return false;
  return typeof (body as { pipe?: unknown }).pipe !== 'function';
}

/** Answers a stored answer again: its status, headers and exact bytes, marked replayed. */
function replay(ctx: Context, row: KeyRow) {
  ctx.status = row.response_status!;
  ctx.set(REPLAYED_HEADER, 'true');
  for (const [name, value] of Object.entries(row.response_headers ?? {})) ctx.set(name, value);
  if (row.response_body !== null) {
    ctx.body = row.response_body;
    ctx.type = 'application/json';
  }
}

/**
 * A key whose release failed (Postgres was down when its execution failed, with 503) would hold
 * its lock until it runs out, answering the client's retries 409 in progress although nothing
 * runs: it is released as soon as Postgres answers again, tried every half second until then.
 */
function releaseLater(db: Knex, lockTimeout: number, scope: string, key: string, token: string) {
  const giveUpAt = Date.now() + lockTimeout;
  const attempt = () =>
    setTimeout(() => {
      releaseKey(db, scope, key, token).catch(() => {
        if (Date.now() < giveUpAt) attempt();
      });
    }, 500).unref();
  attempt();
}

export interface IdempotencyDeps {
  db: Knex;
  config: Pick<Config, 'IDEMPOTENCY_KEY_TTL' | 'IDEMPOTENCY_LOCK_TIMEOUT' | 'IDEMPOTENCY_WAIT'>;
  clock: Clock;
  logger: Logger;
}

export function createIdempotency({ db, config, clock, logger }: IdempotencyDeps) {
  const lockTimeout = config.IDEMPOTENCY_LOCK_TIMEOUT;
  const ttl = config.IDEMPOTENCY_KEY_TTL;
  const later = (from: Date, ms: number) => new Date(from.getTime() + ms);

  const waiters = keyWaiters();

  const storedHeaders = (ctx: Context) =>
    Object.fromEntries(STORED_HEADERS.map((name) => [name, ctx.response.get(name)]).filter(([, value]) => value));

  async function execute(
    ctx: Context,
    scope: string,
    key: string,
    token: string,
    handler: () => Promise<void> | void,
  ): Promise<void> {
    // A handler that outlives the lock timeout (a provider round trip) keeps its key by renewing it.
    const renewal = setInterval(
      () => {
        renewKey(db, scope, key, token, later(clock.now(), lockTimeout)).catch((error: unknown) =>
          logger.warn({ err: error, req_id: ctx.state.requestId }, 'idempotency lock renewal failed'),
        );
      },
      Math.max(1_000, Math.floor(lockTimeout / 3)),
    );
    renewal.unref();
    const releaseQuietly = () =>
      releaseKey(db, scope, key, token).then(
        () => undefined,
        (error: unknown) => {
          logger.error(
            { err: error, req_id: ctx.state.requestId },
            'idempotency key not released; released in the background once Postgres answers',
          );
          releaseLater(db, lockTimeout, scope, key, token);
        },
      );
    try {
      await handler();
    } catch (error) {
      clearInterval(renewal);
      if (!(error instanceof ServiceError && EXECUTED_REFUSALS.has(error.code))) {
        await releaseQuietly();
        throw error;
      }
      // The execution's own verdict: answered as the error handler would, and stored below.
      ctx.status = HTTP_STATUS[error.code];
      ctx.body = errorBody(error, errorFamilyOf(ctx.path), String(ctx.state.requestId));
    }
    clearInterval(renewal);

    const status = ctx.status;
    if (!(status >= 200 && status < 300) && !EXECUTED_STATUSES.has(status)) {
      await releaseQuietly();
      return;
    }
    if (!isStorable(ctx.body)) {
      logger.error({ req_id: ctx.state.requestId, scope }, 'idempotent route answered a non-JSON body; nothing stored');
      await releaseQuietly();
      return;
    }
    // Serialized once: these exact bytes are sent now and replayed later.
    const text = ctx.body == null ? null : JSON.stringify(ctx.body);
    if (text !== null) {
      ctx.body = text;
      ctx.type = 'application/json';
    }
    ctx.status = status;
    try {
      const stored = await storeAnswer(
        db,
        scope,
        key,
        token,
        { status, body: text, headers: storedHeaders(ctx) },
        clock.now(),
      );
      if (!stored)
        logger.warn(
          { req_id: ctx.state.requestId, scope },
          'idempotency key was taken over while executing; answer not stored',
        );
    } catch (error) {
      // The work is done: the client gets its answer. Retries see RUNNING until the lock runs out,
      // then execute again, and find this execution's work under idempotentExecutionId.
      logger.error({ err: error, req_id: ctx.state.requestId, scope }, 'idempotent answer not stored');
    }
  }

  return {
    /**
     * Runs `handler` under the request's Idempotency-Key, if it carries one: executes it at most
     * once per key, replays its stored answer, or refuses with 409. Called after validation and
     * authorization, so neither kind of refusal is ever stored.
     */
    async run(
      ctx: Context,
      route: AnyRoute,
      input: { params?: unknown; body?: unknown },
      handler: () => Promise<void> | void,
    ): Promise<void> {
      const key = keyOf(ctx);
      if (key === undefined) return handler();
      const caller = ctx.state.caller as Caller | undefined;
      if (!caller)
        throw new Error(`${route.method.toUpperCase()} ${route.path} is idempotent but has no authenticated caller`);
      const scope = scopeOf(caller, route);
      const fingerprint = fingerprintOf(input);

      // A row can vanish (a failed execution releases it) or expire between the two statements:
      // then deciding again is right. Three times of that is contention, answered as in progress.
      // A waiting retry only reads the key (one read shared by this instance's waiters on it); it
      // tries to take the key only when it found it free.
      const waitUntil = Date.now() + config.IDEMPOTENCY_WAIT;
      let poll = FIRST_POLL_MS;
      let free = true;
      for (let contended = 0; contended < 3;) {
        if (free) {
          const token = randomUUID();
          const now = clock.now();
          const acquired = await acquireKey(db, scope, key, {
            fingerprint,
            token,
            now,
            lockedUntil: later(now, lockTimeout),
            expiresAt: later(now, ttl),
          });
          if (acquired) {
            if (!acquired.inserted)
              logger.warn(
                { req_id: ctx.state.requestId, scope },
                'idempotency key taken over (expired, or its executor stopped)',
              );
            ctx.state[EXECUTION_ID] = executionId(scope, key, fingerprint);
            try {
              return await execute(ctx, scope, key, token, handler);
            } finally {
              waiters.settled(scope, key);
            }
          }
        }
        const row = await waiters.read(scope, key, () => findKey(db, scope, key));
        free = true;
        if (!row || row.expires_at <= clock.now()) {
          contended++;
          continue;
        }
        if (row.fingerprint !== fingerprint) throw new ServiceError(ErrorCode.IDEMPOTENCY_KEY_REUSED);
        if (row.state === 'DONE') return replay(ctx, row);
        if (row.locked_until <= clock.now()) {
          contended++;
          continue;
        }
        // The same request, still executing: wait for its answer, then look again. Retries piling
        // up on one key past MAX_WAITERS are told at once to come back (each holds a connection).
        const left = waitUntil - Date.now();
        if (left <= 0 || ctx.res.destroyed || waiters.count(scope, key) >= MAX_WAITERS) break;
        await waiters.pause(ctx, scope, key, Math.min(left, poll));
        poll = Math.min(poll * 2, MAX_POLL_MS);
        free = false;
      }
      throw new ServiceError(ErrorCode.IDEMPOTENCY_REQUEST_IN_PROGRESS, undefined, [], { 'Retry-After': '1' });
    },
  };
}
export type Idempotency = ReturnType<typeof createIdempotency>;

import { z } from 'zod';
import { byteSize, date, duration, flag, optionalUrl, port, positiveInt } from './fields';

/** Settings of the service as a whole: the API, Postgres, Temporal, the worker, callbacks, idempotency, rate limits. */
export const platformSettings = {
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Trust X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host from a load balancer in front of
   * the API: the client's address, and the scheme and host of the API's links without PUBLIC_BASE_URL.
   */
  TRUST_PROXY: flag(false),
  /**
   * With TRUST_PROXY, how many proxies in front of the API append to X-Forwarded-For: the client
   * is that many entries from the right (entries further left are the client's own words).
   */
  TRUST_PROXY_HOPS: positiveInt(1),
  PORT: port(3000),
  /**
   * Public base address of the API, used in links such as callback URLs. Unset, the API makes its
   * answers' links under each request's own origin (api/public-url.ts); the worker's links need it.
   */
  PUBLIC_BASE_URL: optionalUrl,
  BODY_LIMIT: byteSize('100kb'),
  /** The verification routes carry base64 selfies, documents and liveness frames. */
  BODY_LIMIT_VERIFICATION: byteSize('20mb'),

  /** Postgres connection string; when absent, `npm start` and `npm test` run an embedded PostgreSQL. */
  DATABASE_URL: optionalUrl,
  DATABASE_POOL_MAX: positiveInt(10),

  /** Temporal frontend address; when absent, `npm start` runs a Temporal dev server. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('lending-service'),
  /**
   * Longest wait between a client's attempts to reach Temporal again once it stopped answering
   * (gRPC's own default grows to 2 minutes: a restarted Temporal would go unnoticed that long).
   */
  TEMPORAL_RECONNECT_BACKOFF_MAX: duration('5s'),
  WORKER_METRICS_PORT: port(9464),
  WORKER_SHUTDOWN_GRACE: duration('30s'),
  /**
   * Whether the worker ensures the service's Temporal Schedules as it starts (pointing them at its
   * TEMPORAL_TASK_QUEUE). Off for a worker on a queue of its own beside the service's (a test's),
   * which would otherwise draw the periodic runs to a queue that goes away with it.
   */
  WORKER_SCHEDULES: flag(true),
  /**
   * A workflow bundle built beforehand (`npm run bundle`, e.g. when the image is built): the worker
   * loads it instead of bundling at start, a few seconds sooner. Unset: it bundles the checkout's.
   */
  WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  READINESS_TIMEOUT: duration('2s'),

  /** Largest provider callback body (413 beyond): a real one is under 4 kB. */
  CALLBACK_BODY_LIMIT: byteSize('16kb'),
  /** Callbacks stored raw per transaction or KYC application; more are counted and logged, not stored. */
  CALLBACKS_STORED_PER_RESOURCE: positiveInt(20),
  /** How long raw provider callbacks (and payout status queries) are kept; older ones are purged by the callback-retention schedule. */
  CALLBACK_RETENTION: duration('90d'),
  /** How often the callback-retention schedule runs. */
  CALLBACK_PURGE_INTERVAL: duration('1h'),

  IDEMPOTENCY_KEY_TTL: duration('24h'),
  /**
   * How long a running Idempotency-Key request holds its key without renewing it (it renews while
   * it runs): past it the executor is taken for dead and a retry executes instead.
   */
  IDEMPOTENCY_LOCK_TIMEOUT: duration('60s'),
  /**
   * How long an identical retry that arrives while the first request still runs waits for the
   * first one's stored answer, which it then replays; past it, 409 IDEMPOTENCY_REQUEST_IN_PROGRESS
   * with Retry-After. Kept under IDEMPOTENCY_LOCK_TIMEOUT and under a client's own timeout.
   */
  IDEMPOTENCY_WAIT: duration('10s'),
  /** How often the idempotency-key-purge schedule deletes expired keys. */
  IDEMPOTENCY_PURGE_INTERVAL: duration('10m'),

  RATE_LIMIT_MEMORY: flag(false),
  /** Requests per RATE_LIMIT_WINDOW for one caller, and for all callers of one organization together. */
  RATE_LIMIT_CALLER_POINTS: positiveInt(300),
  RATE_LIMIT_ORGANIZATION_POINTS: positiveInt(3000),
  RATE_LIMIT_WINDOW: duration('1m'),
  /** Provider callbacks per RATE_LIMIT_WINDOW from one source address (a budget of their own). */
  RATE_LIMIT_CALLBACK_POINTS: positiveInt(600),
  /**
   * Failed authentications per RATE_LIMIT_WINDOW from one source address, and against one target
   * (a user, an API key prefix) from all addresses together; past it, 429 before any verification.
   */
  RATE_LIMIT_AUTH_FAILURE_POINTS: positiveInt(20),
  /** How often an API instance adds its spending to the shared counters and reads theirs back. */
  RATE_LIMIT_SYNC_INTERVAL: duration('100ms'),

  /** Deprecated operations and channels: when they were deprecated (RFC 9745) and their sunset (RFC 8594). */
  DEPRECATED_SINCE: date('2026-07-01'),
  DEPRECATION_SUNSET: date('2027-07-01'),
};

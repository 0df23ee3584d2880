import { z } from 'zod';
import { duration, positiveInt } from './fields';

/** Outbound webhooks: where deliveries may go, how they are retried, and when an endpoint is disabled. */
export const webhookSettings = {
  /**
   * The addresses a webhook endpoint may resolve to: `public` only, or with `loopback` (npm start's
   * receiver simulator), or with the `private` ranges too. Link-local (the cloud metadata address)
   * is refused whatever this says. Endpoint URLs must be https when NODE_ENV is production.
   */
  WEBHOOK_ALLOWED_ADDRESSES: z.enum(['public', 'loopback', 'private']).default('public'),
  /** A receiver's whole answer must arrive within this; slower counts as a failed attempt. */
  WEBHOOK_TIMEOUT: duration('10s'),
  /** The first retry's wait; each next one doubles, up to WEBHOOK_RETRY_MAX_INTERVAL. */
  WEBHOOK_RETRY_INITIAL: duration('5s'),
  WEBHOOK_RETRY_MAX_INTERVAL: duration('1h'),
  /** How long a delivery is retried before it ends FAILED. */
  WEBHOOK_RETRY_WINDOW: duration('3d'),
  /** An endpoint every attempt to which failed for this long is disabled, with the reason. */
  WEBHOOK_DISABLE_AFTER: duration('5d'),
  /** After a rotation, messages are signed with the old secret too for this long. */
  WEBHOOK_SECRET_GRACE: duration('24h'),
  /**
   * The task queue of delivery runs and their attempts (TEMPORAL_TASK_QUEUE-webhooks unless set):
   * the worker serves it with WEBHOOK_ACTIVITY_SLOTS slots of its own, so receivers, however slow,
   * never take the slots money and identity steps run in.
   */
  WEBHOOK_TASK_QUEUE: z.string().min(1).optional(),
  WEBHOOK_ACTIVITY_SLOTS: positiveInt(32),
  /** Deliveries in flight to one endpoint from one worker; more wait, so a slow receiver holds up only its own. */
  WEBHOOK_ENDPOINT_CONCURRENCY: positiveInt(4),
  /**
   * Deliveries in flight for one organization from one worker: its share of WEBHOOK_ACTIVITY_SLOTS,
   * so one tenant's receivers, however many and however dead, never hold every slot.
   */
  WEBHOOK_ORGANIZATION_CONCURRENCY: positiveInt(8),
  /**
   * Failed attempts in a row (timeouts, connection failures, 5xx, 429) after which an endpoint
   * backs off: its deliveries wait without connecting, WEBHOOK_RETRY_INITIAL doubling up to
   * WEBHOOK_RETRY_MAX_INTERVAL with each further failure, one attempt probing it when the time comes.
   */
  WEBHOOK_BACKOFF_AFTER_FAILURES: positiveInt(5),
  /**
   * Deliveries resends may start again within WEBHOOK_RESEND_WINDOW, of one endpoint and of one
   * organization (a resend naming an endpoint costs one at least); past either, 429 with
   * Retry-After. A resend of a delivery still queued is coalesced with it and costs nothing more.
   */
  WEBHOOK_RESEND_WINDOW: duration('1h'),
  WEBHOOK_RESENDS_PER_ENDPOINT: positiveInt(1_000),
  WEBHOOK_RESENDS_PER_ORGANIZATION: positiveInt(2_000),
  /** Endpoints one organization may register. */
  WEBHOOK_ENDPOINTS_MAX: positiveInt(16),
  /** How long one dispatcher run lasts before its schedule starts the next one. */
  WEBHOOK_DISPATCH_INTERVAL: duration('1m'),
  /**
   * Delivery runs the dispatcher starts for one organization a second; more wait their turn in
   * Postgres, so one tenant's burst (a full resend, thousands of its own events) never floods the
   * task queues every tenant's runs share.
   */
  WEBHOOK_DISPATCH_PER_ORGANIZATION: positiveInt(100),
  /**
   * Delivery runs not ended one endpoint may have; the dispatcher starts no more for it until
   * some end. A receiver that answers nothing keeps the rest of its deliveries waiting in Postgres
   * (free) instead of as runs in the task queues every tenant shares; a healthy one never nears it.
   */
  WEBHOOK_RUNS_PER_ENDPOINT: positiveInt(20),
  /**
   * Runs one organization may have started that have not made their first attempt yet (to
   * endpoints not backing off); the dispatcher starts no more of its runs until some have. A tenant
   * whose thousands of deliveries go to receivers that never answer gets this many runs at first,
   * and more only as its attempts end, so its burst never floods the task queues every tenant
   * shares; a healthy tenant's runs make their attempt within milliseconds of starting and never
   * near it.
   */
  WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION: positiveInt(64),
  /** How often the dispatcher looks for committed events (one statement on a partial index): an event waits half this on average. */
  WEBHOOK_DISPATCH_POLL: duration('100ms'),
  /**
   * How long an event (with its deliveries and their attempts) is kept for inspection and resend;
   * older ones are purged by the webhook-event-retention schedule once none of their deliveries
   * is still PENDING.
   */
  WEBHOOK_EVENT_RETENTION: duration('90d'),
  /** How often the webhook-event-retention schedule runs. */
  WEBHOOK_EVENT_PURGE_INTERVAL: duration('1h'),
};

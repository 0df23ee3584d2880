import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { dispatchEvents, markStarted, unstartedDeliveries } from '../../db/webhooks/events';
import { forEachConcurrently } from '../../domain/concurrency';
import { webhookDeliveryStart, webhookRetryOf } from '../../workflows/webhooks/messages';
import type { Needs } from '../deps';

/** Events taken, and delivery runs started, per round. */
const BATCH = 100;
/** Even with no notification, a round this often (one could be missed while a connection was lost). */
const POLL_MS = 5_000;

type Deps = Needs<
  'db' | 'clock' | 'temporal' | 'logger',
  | 'TEMPORAL_TASK_QUEUE'
  | 'WEBHOOK_RETRY_INITIAL'
  | 'WEBHOOK_RETRY_MAX_INTERVAL'
  | 'WEBHOOK_RETRY_WINDOW'
  | 'WEBHOOK_TIMEOUT'
>;

/**
 * The outbox's relay: committed events get their deliveries (one per subscribed endpoint) and
 * each delivery its run. Woken by the NOTIFY the event triggers send at commit, and every
 * POLL_MS regardless. A run is started with REJECT_DUPLICATE: a round repeated after a crash
 * never sends a delivered event again (resends are the API's, which allows it).
 */
export function createWebhookDispatchActivities(deps: Deps) {
  const { db, clock, temporal, config } = deps;
  const retry = webhookRetryOf(config);

  async function startRuns(): Promise<number> {
    let started = 0;
    for (;;) {
      const deliveries = await unstartedDeliveries(db, BATCH);
      if (deliveries.length === 0) return started;
      await forEachConcurrently(deliveries, 16, async (d) => {
        const input = {
          organizationId: d.organization_id,
          deliveryId: d.id,
          eventId: d.event_id,
          endpointId: d.endpoint_id,
          retry,
        };
        try {
          await temporal.workflow.start('webhookDelivery', {
            ...webhookDeliveryStart(input, config.TEMPORAL_TASK_QUEUE),
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
          });
        } catch (error) {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        }
      });
      await markStarted(
        db,
        deliveries.map((d) => d.id),
        clock.now(),
      );
      started += deliveries.length;
    }
  }

  async function round(): Promise<{ events: number; started: number }> {
    let events = 0;
    for (let taken = BATCH; taken === BATCH; events += taken) taken = await dispatchEvents(db, BATCH, clock.now());
    return { events, started: await startRuns() };
  }

  return {
    /** Dispatches for `listenMs`, then returns what it did; heartbeats while it listens. */
    async dispatchWebhookEvents(listenMs: number): Promise<{ events: number; started: number }> {
      const context = Context.current();
      const until = Date.now() + listenMs;
      const total = { events: 0, started: 0 };
      const connection = (await db.client.acquireConnection()) as PgConnection;
      let wake: (() => void) | undefined;
      let notified = true;
      const onNotification = () => {
        notified = true;
        wake?.();
      };
      connection.on('notification', onNotification);
      try {
        await connection.query('LISTEN webhook_events');
        while (Date.now() < until) {
          context.heartbeat();
          if (notified) {
            notified = false;
            const done = await round();
            total.events += done.events;
            total.started += done.started;
            continue;
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(POLL_MS, Math.max(0, until - Date.now())));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
          notified = true;
          if (context.cancellationSignal.aborted) throw context.cancellationSignal.reason;
        }
        return total;
      } finally {
        connection.removeListener('notification', onNotification);
        await connection.query('UNLISTEN webhook_events').catch(() => {});
        await db.client.releaseConnection(connection);
      }
    },
  };
}

interface PgConnection {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: () => void): void;
  removeListener(event: 'notification', listener: () => void): void;
}

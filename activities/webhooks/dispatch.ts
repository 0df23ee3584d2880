import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { dispatchEvents, markStarted, unstartedDeliveries } from '../../db/webhooks/events';
import { forEachConcurrently } from '../../domain/concurrency';
import { webhookDeliveryStart, webhookRetryOf, webhookTaskQueue } from '../../workflows/webhooks/messages';
import type { Needs } from '../deps';

/** Events taken, and delivery runs started, per batch; a round is at most ROUND_BATCHES of each. */
const BATCH = 100;
const ROUND_BATCHES = 10;

type Deps = Needs<
  'db' | 'clock' | 'temporal',
  | 'TEMPORAL_TASK_QUEUE'
  | 'WEBHOOK_TASK_QUEUE'
  | 'WEBHOOK_DISPATCH_POLL'
  | 'WEBHOOK_RETRY_INITIAL'
  | 'WEBHOOK_RETRY_MAX_INTERVAL'
  | 'WEBHOOK_RETRY_WINDOW'
  | 'WEBHOOK_TIMEOUT'
>;

/**
 * The outbox's relay: committed events get their deliveries (one per subscribed endpoint) and
 * each delivery its run, polled every WEBHOOK_DISPATCH_POLL (one statement over a partial index
 * that holds only what waits; deliveries still to start are looked for after events were taken,
 * and every few seconds). A run is started with REJECT_DUPLICATE: a round repeated after a crash
 * never sends a delivered event again (resends are the API's, which allows it). It heartbeats per
 * batch, so a busy round is never taken for a lost one.
 */
export function createWebhookDispatchActivities(deps: Deps) {
  const { db, clock, temporal, config } = deps;
  const retry = webhookRetryOf(config);
  const activityTaskQueue = webhookTaskQueue(config);

  async function startRuns(heartbeat: () => void): Promise<number> {
    let started = 0;
    for (let batch = 0; batch < ROUND_BATCHES; batch++) {
      heartbeat();
      const deliveries = await unstartedDeliveries(db, BATCH);
      if (deliveries.length === 0) break;
      await forEachConcurrently(deliveries, 16, async (d) => {
        const input = {
          organizationId: d.organization_id,
          deliveryId: d.id,
          generation: d.generation,
          eventId: d.event_id,
          endpointId: d.endpoint_id,
          activityTaskQueue,
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
    return started;
  }

  /** Starts are looked for after events were taken, and this often regardless (one lost to a crash). */
  const SWEEP_MS = 5_000;
  let swept = 0;
  async function round(heartbeat: () => void): Promise<{ events: number; started: number }> {
    let events = 0;
    for (let batch = 0; batch < ROUND_BATCHES; batch++) {
      heartbeat();
      const taken = await dispatchEvents(db, BATCH, clock.now());
      events += taken;
      if (taken < BATCH) break;
    }
    if (events === 0 && Date.now() - swept < SWEEP_MS) return { events, started: 0 };
    swept = Date.now();
    return { events, started: await startRuns(heartbeat) };
  }

  return {
    /** Dispatches for `listenMs`, then returns what it did. */
    async dispatchWebhookEvents(listenMs: number): Promise<{ events: number; started: number }> {
      const context = Context.current();
      const heartbeat = () => context.heartbeat();
      const until = Date.now() + listenMs;
      const total = { events: 0, started: 0 };
      while (Date.now() < until) {
        const done = await round(heartbeat);
        total.events += done.events;
        total.started += done.started;
        if (done.events === 0 && done.started === 0) await context.sleep(config.WEBHOOK_DISPATCH_POLL);
      }
      return total;
    },
  };
}

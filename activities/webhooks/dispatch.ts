import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { dispatchEvents, liveRuns, markStarted, unstartedDeliveries, untriedRuns } from '../../db/webhooks/events';
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
  | 'WEBHOOK_DISPATCH_PER_ORGANIZATION'
  | 'WEBHOOK_RUNS_PER_ENDPOINT'
  | 'WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION'
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

  /** Runs started per organization in the current second: at most WEBHOOK_DISPATCH_PER_ORGANIZATION. */
  const startsThisSecond = new Map<string, { second: number; count: number }>();
  const mayStart = (organizationId: string) => {
    const second = Math.floor(Date.now() / 1000);
    const seen = startsThisSecond.get(organizationId);
    const count = seen?.second === second ? seen.count : 0;
    if (count >= config.WEBHOOK_DISPATCH_PER_ORGANIZATION) return false;
    startsThisSecond.set(organizationId, { second, count: count + 1 });
    if (startsThisSecond.size > 10_000) startsThisSecond.clear(); // a second's worth of organizations at most
    return true;
  };

  /**
   * Endpoints found holding WEBHOOK_RUNS_PER_ENDPOINT runs not ended, until when they are not
   * asked about again: their runs end slowly (that is why they pile up).
   */
  const full = new Map<string, number>();
  const FULL_RECHECK_MS = 2_000;

  /**
   * Starts the runs of deliveries still without one, oldest first (issue 54), but
   * - none for an endpoint that already has WEBHOOK_RUNS_PER_ENDPOINT runs not ended: a receiver
   *   that answers nothing keeps its deliveries waiting in Postgres, where waiting costs nothing,
   *   rather than as runs every tenant's task queues carry; a healthy one ends its runs in
   *   milliseconds and never nears the bound;
   * - none for an organization that already has WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION runs that
   *   have not made their first attempt: a tenant whose receivers never answer gets that many at
   *   first and more only as their attempts end, instead of every endpoint's bound at once, whose
   *   starts and turned-away attempts would fill the task queues every tenant shares for seconds;
   * - and at most WEBHOOK_DISPATCH_PER_ORGANIZATION a second for one organization, so a burst of
   *   its (a full resend, thousands of its own events) is spread out while the others' go by.
   * Answers how many it started, and whether the rate held some back (then it is called again
   * next round, not at the next sweep).
   */
  async function startRuns(heartbeat: () => void): Promise<{ started: number; heldBack: boolean }> {
    let started = 0;
    const held = new Set<string>();
    const now = Date.now();
    for (const [endpointId, until] of full) if (until <= now) full.delete(endpointId);
    for (let batch = 0; batch < ROUND_BATCHES; batch++) {
      heartbeat();
      const found = await unstartedDeliveries(db, BATCH, { organizations: [...held], endpoints: [...full.keys()] });
      if (found.length === 0) break;
      const [live, untried] = await Promise.all([
        liveRuns(db, [...new Set(found.map((d) => d.endpoint_id))]),
        untriedRuns(db, [...new Set(found.map((d) => d.organization_id))], clock.now()),
      ]);
      const deliveries = found.filter((d) => {
        if (full.has(d.endpoint_id)) return false;
        const running = live.get(d.endpoint_id) ?? 0;
        if (running >= config.WEBHOOK_RUNS_PER_ENDPOINT) {
          full.set(d.endpoint_id, Date.now() + FULL_RECHECK_MS);
          return false;
        }
        const waiting = untried.get(d.organization_id) ?? 0;
        if (
          held.has(d.organization_id) ||
          waiting >= config.WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION ||
          !mayStart(d.organization_id)
        ) {
          held.add(d.organization_id);
          return false;
        }
        live.set(d.endpoint_id, running + 1);
        untried.set(d.organization_id, waiting + 1);
        return true;
      });
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
          // A first generation's run once only: a round repeated after a crash never sends a
          // delivered event again. A resent one (its API start failed, or was left to this for the
          // endpoint's bound) replaces the run of the generation before, as the API's resend does.
          await temporal.workflow.start('webhookDelivery', {
            ...webhookDeliveryStart(input, config.TEMPORAL_TASK_QUEUE),
            ...(d.generation === 0
              ? { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const }
              : {
                  workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
                  workflowIdConflictPolicy: 'TERMINATE_EXISTING' as const,
                }),
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
    return { started, heldBack: held.size > 0 };
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
    const { started, heldBack } = await startRuns(heartbeat);
    // What was held back is looked for again next round, not at the next sweep.
    swept = heldBack ? 0 : Date.now();
    return { events, started };
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

import { ApplicationFailure, Context } from '@temporalio/activity';
import { findDelivery, finishDelivery, recordAttempt } from '../../db/webhooks/delivery';
import { claimAttempt, endpointAnswered, endpointFailed, findEndpoint } from '../../db/webhooks/endpoints';
import { findEvent } from '../../db/webhooks/events';
import { eventView, renderSettings } from '../../domain/webhooks/events';
import { backoffMs, receiverExcerpt, verdictOf } from '../../domain/webhooks/verdicts';
import { WebhookFailure, type WebhookDeliveryInput } from '../../workflows/webhooks/messages';
import type { Needs } from '../deps';
import type { DeliveryOutcome } from '../../providers/webhooks/client';
import { DeliverySlots, WaitingLines } from './slots';

/** The shortest and the longest wait of a delivery that found no free slot (by the line before it), jittered. */
const BUSY_WAIT_MS = 1_000;
const BUSY_WAIT_MAX_MS = 5 * 60_000;
const jittered = (ms: number) => Math.round(ms * (0.5 + Math.random()));

/**
 * Sending a delivery: one attempt per activity attempt, recorded with the receiver's answer, and
 * the endpoint's run of failures kept (disabled past WEBHOOK_DISABLE_AFTER). Fair between
 * tenants (issue 54): each worker sends at most WEBHOOK_ENDPOINT_CONCURRENCY attempts at once to
 * one endpoint and WEBHOOK_ORGANIZATION_CONCURRENCY for one organization, taken before anything
 * else is done, so one tenant's dead receivers hold only its share of the slots; and an endpoint
 * failing WEBHOOK_BACKOFF_AFTER_FAILURES times in a row backs off (its deliveries wait, making
 * no connection, one attempt probing it when the time comes).
 */
export function createWebhookDeliveryActivities(
  deps: Needs<
    'db' | 'clock' | 'providers',
    | 'WEBHOOK_BACKOFF_AFTER_FAILURES'
    | 'WEBHOOK_DISABLE_AFTER'
    | 'WEBHOOK_ENDPOINT_CONCURRENCY'
    | 'WEBHOOK_ORGANIZATION_CONCURRENCY'
    | 'WEBHOOK_RETRY_INITIAL'
    | 'WEBHOOK_RETRY_MAX_INTERVAL'
    | 'WEBHOOK_TIMEOUT'
    | 'PUBLIC_BASE_URL'
    | 'KYC_MAX_RESUBMISSIONS'
  >,
) {
  const { db, clock, config } = deps;
  const settings = renderSettings(config);
  const slots = new DeliverySlots(config.WEBHOOK_ENDPOINT_CONCURRENCY, config.WEBHOOK_ORGANIZATION_CONCURRENCY);
  const lines = new WaitingLines();
  const unavailable = (why: string) => ApplicationFailure.nonRetryable(why, WebhookFailure.ENDPOINT_UNAVAILABLE);
  const backoff = {
    after: config.WEBHOOK_BACKOFF_AFTER_FAILURES,
    initialMs: config.WEBHOOK_RETRY_INITIAL,
    maximumMs: config.WEBHOOK_RETRY_MAX_INTERVAL,
  };
  /** A probe holds the endpoint's turn this long: its attempt's deadline and a margin. */
  const probeMs = config.WEBHOOK_TIMEOUT + 5_000;

  return {
    async attemptWebhookDelivery(input: WebhookDeliveryInput): Promise<void> {
      const { organizationId } = input;
      const info = Context.current().info;
      // The slots first, before any read: a delivery that finds none costs nothing but its retry,
      // which comes when its turn might: after those waiting before it, as many as the line is
      // long over the bound's slots, each as long as the key's attempts have been lasting.
      const keys = { endpoint: `endpoint:${input.endpointId}`, organization: `organization:${organizationId}` };
      const taken = slots.take(organizationId, input.endpointId);
      if (typeof taken !== 'function') {
        const key = keys[taken];
        const waiting = lines.wait(key, input.deliveryId, Date.now());
        const bound =
          taken === 'endpoint' ? config.WEBHOOK_ENDPOINT_CONCURRENCY : config.WEBHOOK_ORGANIZATION_CONCURRENCY;
        const underWay = slots.oldestMs(taken, taken === 'endpoint' ? input.endpointId : organizationId);
        const turn = lines.turnMs(key, waiting, bound, underWay);
        throw ApplicationFailure.create({
          message: `the ${taken} has its most deliveries in flight`,
          type: 'WEBHOOK_ENDPOINT_BUSY',
          nextRetryDelay: jittered(Math.min(BUSY_WAIT_MAX_MS, Math.max(BUSY_WAIT_MS, turn))),
        });
      }
      lines.done(keys.endpoint, input.deliveryId);
      lines.done(keys.organization, input.deliveryId);
      const release = taken;
      let outcome: DeliveryOutcome;
      let attemptedAt: Date;
      let endpointId: string;
      let deliveryId: string;
      try {
        const [delivery, endpoint, event] = await Promise.all([
          findDelivery(db, organizationId, input.deliveryId),
          findEndpoint(db, organizationId, input.endpointId),
          findEvent(db, organizationId, input.eventId),
        ]);
        if (!delivery || !endpoint || !event) throw unavailable('the endpoint, the event or the delivery was deleted');
        if (!endpoint.enabled)
          throw unavailable(`the endpoint is disabled: ${endpoint.disabled_reason ?? 'no reason'}`);
        if (!endpoint.event_types.includes(event.type))
          throw unavailable(`the endpoint no longer subscribes to ${event.type}`);
        attemptedAt = clock.now();
        const wait = await claimAttempt(db, organizationId, endpoint, attemptedAt, probeMs);
        if (wait)
          throw ApplicationFailure.create({
            message: 'the endpoint is backing off after failing again and again',
            type: 'WEBHOOK_ENDPOINT_BACKING_OFF',
            // Spread over as long again: the endpoint's waiting deliveries do not all wake at its time.
            nextRetryDelay: wait.waitMs + Math.round(Math.random() * (wait.waitMs + BUSY_WAIT_MS)),
          });
        const secrets = [endpoint.secret];
        if (
          endpoint.previous_secret &&
          endpoint.previous_secret_expires_at &&
          endpoint.previous_secret_expires_at > attemptedAt
        )
          secrets.push(endpoint.previous_secret);
        endpointId = endpoint.id;
        deliveryId = delivery.id;
        outcome = await deps.providers.webhooks.deliver({
          url: endpoint.url,
          id: event.id,
          timestampSeconds: Math.floor(attemptedAt.getTime() / 1000),
          body: JSON.stringify(eventView(event, settings)),
          secrets,
        });
      } finally {
        release();
      }
      lines.timed(keys.endpoint, outcome.durationMs);
      lines.timed(keys.organization, outcome.durationMs);
      const now = attemptedAt;
      await recordAttempt(db, organizationId, input.generation, {
        delivery_id: deliveryId,
        run_id: info.workflowExecution?.runId ?? 'unknown',
        attempt: info.attempt,
        attempted_at: now,
        duration_ms: outcome.durationMs,
        ...(outcome.kind === 'answered'
          ? { status_code: outcome.status, error: null, response_body: receiverExcerpt(outcome) }
          : { status_code: null, error: `${outcome.error}: ${outcome.detail}`, response_body: null }),
      });
      const verdict = verdictOf(outcome, now);
      if (verdict.kind === 'delivered') {
        await finishDelivery(db, organizationId, deliveryId, input.generation, 'SUCCEEDED', clock.now());
        await endpointAnswered(db, organizationId, endpointId);
        return;
      }
      // The run of failures and the backing off count from when the attempt ended (a timeout's end).
      await endpointFailed(db, organizationId, endpointId, clock.now(), {
        disableAfterMs: config.WEBHOOK_DISABLE_AFTER,
        // Failures further apart than the longest retry wait are not one run of failures.
        quietMs: 2 * config.WEBHOOK_RETRY_MAX_INTERVAL,
        reason: verdict.reason,
        ...(verdict.kind === 'retry' && { backoff }),
      });
      if (verdict.kind === 'give-up') throw ApplicationFailure.nonRetryable(verdict.reason, verdict.type);
      // A Retry-After is honoured, never sooner than the backoff would have waited.
      const wait = backoffMs(input.retry, info.attempt);
      throw ApplicationFailure.create({
        message: verdict.reason,
        type: 'WEBHOOK_NOT_DELIVERED',
        ...(verdict.afterMs !== undefined ? { nextRetryDelay: Math.max(verdict.afterMs, wait) } : {}),
      });
    },

    /** The delivery ended without a 2xx: FAILED, with why. */
    async failWebhookDelivery(input: WebhookDeliveryInput, reason: string): Promise<void> {
      await finishDelivery(db, input.organizationId, input.deliveryId, input.generation, 'FAILED', clock.now(), reason);
    },
  };
}

import { ApplicationFailure, Context } from '@temporalio/activity';
import { findDelivery, finishDelivery, recordAttempt } from '../../db/webhooks/deliveries';
import { endpointAnswered, endpointFailed, findEndpoint } from '../../db/webhooks/endpoints';
import { findEvent } from '../../db/webhooks/events';
import { eventView, renderSettings } from '../../domain/webhooks/events';
import { backoffMs, receiverExcerpt, verdictOf } from '../../domain/webhooks/verdicts';
import { WebhookFailure, type WebhookDeliveryInput } from '../../workflows/webhooks/messages';
import type { Needs } from '../deps';
import type { DeliveryOutcome } from '../../providers/webhooks/client';
import { EndpointSlots } from './slots';

/** How long a delivery waits for a free slot at a busy endpoint before trying again (plus up to as much again). */
const BUSY_ENDPOINT_WAIT_MS = 1_000;

/**
 * Sending a delivery: one attempt per activity attempt, recorded with the receiver's answer, and
 * the endpoint's run of failures kept (disabled past WEBHOOK_DISABLE_AFTER). Each endpoint gets
 * at most WEBHOOK_ENDPOINT_CONCURRENCY attempts at once from this worker: a slow receiver holds
 * its own deliveries back, not everyone's.
 */
export function createWebhookDeliveryActivities(
  deps: Needs<
    'db' | 'clock' | 'providers',
    | 'WEBHOOK_DISABLE_AFTER'
    | 'WEBHOOK_ENDPOINT_CONCURRENCY'
    | 'WEBHOOK_RETRY_MAX_INTERVAL'
    | 'PUBLIC_BASE_URL'
    | 'KYC_MAX_RESUBMISSIONS'
  >,
) {
  const { db, clock, config } = deps;
  const settings = renderSettings(config);
  const slots = new EndpointSlots(config.WEBHOOK_ENDPOINT_CONCURRENCY);
  const unavailable = (why: string) => ApplicationFailure.nonRetryable(why, WebhookFailure.ENDPOINT_UNAVAILABLE);

  return {
    async attemptWebhookDelivery(input: WebhookDeliveryInput): Promise<void> {
      const { organizationId } = input;
      const [delivery, endpoint, event] = await Promise.all([
        findDelivery(db, organizationId, input.deliveryId),
        findEndpoint(db, organizationId, input.endpointId),
        findEvent(db, organizationId, input.eventId),
      ]);
      if (!delivery || !endpoint || !event) throw unavailable('the endpoint, the event or the delivery was deleted');
      if (!endpoint.enabled) throw unavailable(`the endpoint is disabled: ${endpoint.disabled_reason ?? 'no reason'}`);
      if (!endpoint.event_types.includes(event.type))
        throw unavailable(`the endpoint no longer subscribes to ${event.type}`);
      // Everything that can throw comes before a slot is taken: a slot is always given back.
      const body = JSON.stringify(eventView(event, settings));
      const now = clock.now();
      const secrets = [endpoint.secret];
      if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now)
        secrets.push(endpoint.previous_secret);
      const release = slots.take(endpoint.id);
      if (!release)
        throw ApplicationFailure.create({
          message: 'the endpoint has its most deliveries in flight',
          type: 'WEBHOOK_ENDPOINT_BUSY',
          nextRetryDelay: BUSY_ENDPOINT_WAIT_MS * (1 + Math.random()),
        });
      let outcome: DeliveryOutcome;
      try {
        outcome = await deps.providers.webhooks.deliver({
          url: endpoint.url,
          id: event.id,
          timestampSeconds: Math.floor(now.getTime() / 1000),
          body,
          secrets,
        });
      } finally {
        release();
      }
      const info = Context.current().info;
      await recordAttempt(db, organizationId, input.generation, {
        delivery_id: delivery.id,
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
        await finishDelivery(db, organizationId, delivery.id, input.generation, 'SUCCEEDED', clock.now());
        await endpointAnswered(db, organizationId, endpoint.id);
        return;
      }
      await endpointFailed(db, organizationId, endpoint.id, now, {
        disableAfterMs: config.WEBHOOK_DISABLE_AFTER,
        // Failures further apart than the longest retry wait are not one run of failures.
        quietMs: 2 * config.WEBHOOK_RETRY_MAX_INTERVAL,
        reason: verdict.reason,
      });
      if (verdict.kind === 'give-up') throw ApplicationFailure.nonRetryable(verdict.reason, verdict.type);
      // A Retry-After is honoured, never sooner than the backoff would have waited.
      const backoff = backoffMs(input.retry, info.attempt);
      throw ApplicationFailure.create({
        message: verdict.reason,
        type: 'WEBHOOK_NOT_DELIVERED',
        ...(verdict.afterMs !== undefined ? { nextRetryDelay: Math.max(verdict.afterMs, backoff) } : {}),
      });
    },

    /** The delivery ended without a 2xx: FAILED, with why. */
    async failWebhookDelivery(input: WebhookDeliveryInput, reason: string): Promise<void> {
      await finishDelivery(db, input.organizationId, input.deliveryId, input.generation, 'FAILED', clock.now(), reason);
    },
  };
}

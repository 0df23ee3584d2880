import { ApplicationFailure, Context } from '@temporalio/activity';
import { findDelivery, finishDelivery, recordAttempt } from '../../db/webhooks/deliveries';
import { endpointAnswered, endpointFailed, findEndpoint } from '../../db/webhooks/endpoints';
import { findEvent } from '../../db/webhooks/events';
import { eventView, renderSettings } from '../../domain/webhooks/events';
import { verdictOf } from '../../domain/webhooks/verdicts';
import { WebhookFailure, type WebhookDeliveryInput } from '../../workflows/webhooks/messages';
import type { Needs } from '../deps';
import { EndpointSlots } from './slots';

/** How long a delivery waits for a free slot at a busy endpoint before trying again. */
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
    'WEBHOOK_DISABLE_AFTER' | 'WEBHOOK_ENDPOINT_CONCURRENCY' | 'PUBLIC_BASE_URL' | 'KYC_MAX_RESUBMISSIONS'
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
      const release = slots.take(endpoint.id);
      if (!release)
        throw ApplicationFailure.create({
          message: 'the endpoint has its most deliveries in flight',
          type: 'WEBHOOK_ENDPOINT_BUSY',
          nextRetryDelay: BUSY_ENDPOINT_WAIT_MS,
        });
      const now = clock.now();
      const secrets = [endpoint.secret];
      if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > now)
        secrets.push(endpoint.previous_secret);
      const outcome = await deps.providers.webhooks
        .deliver({
          url: endpoint.url,
          id: event.id,
          timestampSeconds: Math.floor(now.getTime() / 1000),
          body: JSON.stringify(eventView(event, settings)),
          secrets,
        })
        .finally(release);
      const info = Context.current().info;
      const answered = outcome.kind === 'answered';
      await recordAttempt(db, organizationId, {
        delivery_id: delivery.id,
        run_id: info.workflowExecution?.runId ?? 'unknown',
        attempt: info.attempt,
        attempted_at: now,
        status_code: answered ? outcome.status : null,
        duration_ms: outcome.durationMs,
        error: answered ? null : `${outcome.error}: ${outcome.detail}`,
        response_body: answered ? outcome.body.replace(/\0/g, '') : null,
      });
      const verdict = verdictOf(outcome, now);
      if (verdict.kind === 'delivered') {
        await finishDelivery(db, organizationId, delivery.id, 'SUCCEEDED', clock.now());
        await endpointAnswered(db, organizationId, endpoint.id);
        return;
      }
      const disableBefore = new Date(now.getTime() - config.WEBHOOK_DISABLE_AFTER);
      await endpointFailed(
        db,
        organizationId,
        endpoint.id,
        now,
        disableBefore,
        `failing since before ${disableBefore.toISOString()}; last: ${verdict.reason}`,
      );
      if (verdict.kind === 'give-up') throw ApplicationFailure.nonRetryable(verdict.reason, verdict.type);
      throw ApplicationFailure.create({
        message: verdict.reason,
        type: 'WEBHOOK_NOT_DELIVERED',
        ...(verdict.afterMs !== undefined ? { nextRetryDelay: verdict.afterMs } : {}),
      });
    },

    /** The delivery ended without a 2xx: FAILED, with why. */
    async failWebhookDelivery(input: WebhookDeliveryInput, reason: string): Promise<void> {
      await finishDelivery(db, input.organizationId, input.deliveryId, 'FAILED', clock.now(), reason);
    },
  };
}

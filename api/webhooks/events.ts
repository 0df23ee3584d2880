import type { Context } from 'koa';
import { z } from 'zod';
import { type DeliveryStatus, listDeliveries, resendDeliveries } from '../../db/webhooks/delivery';
import { findEndpoint, listEndpoints, type WebhookEndpointRow } from '../../db/webhooks/endpoints';
import {
  findEvent,
  listEvents,
  liveRuns,
  markStarted,
  untriedRuns,
  type WebhookEventRow,
} from '../../db/webhooks/events';
import { forEachConcurrently } from '../../domain/concurrency';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { eventView, renderSettings } from '../../domain/webhooks/events';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute } from '../route';
import { MANAGER, organizationOf, TAG } from './endpoints';
import {
  Cursor,
  decodePosition,
  deliveryView,
  encodePosition,
  EventTypeName,
  PageLinks,
  WebhookDelivery,
  WebhookEvent,
} from './views';
import type { WebhookWorkflows } from './workflows';

/** The most events one resend-since call sends again; beyond, resend from a later time. */
export const RESEND_MAX = 500;
const PAGE = { default: 20, max: 100 } as const;

const Size = z.coerce.number().int().min(1).max(PAGE.max).default(PAGE.default);
const IdParams = z.strictObject({ id: z.uuid() });
const DeliveriesQuery = z.strictObject({
  size: Size,
  after: Cursor.optional(),
  status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']).optional(),
});
const DeliveryPage = z
  .strictObject({ data: z.array(WebhookDelivery), links: PageLinks })
  .meta({ id: 'WebhookDeliveryPage' });
const Resent = z
  .strictObject({
    data: z.array(WebhookDelivery).meta({
      description: 'The deliveries sent again (PENDING), and those still queued that the resend coalesced with',
    }),
  })
  .meta({ id: 'WebhookResend' });

function positionOf(after: string | undefined) {
  if (after === undefined) return undefined;
  const position = decodePosition(after);
  if (!position)
    throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
      { path: 'query.after', reason: 'not a cursor this list gave out', sub_code: SubCode.INVALID_VALUE },
    ]);
  return position;
}

const subscribed = (endpoint: WebhookEndpointRow, event: WebhookEventRow) =>
  endpoint.enabled && endpoint.event_types.includes(event.type);

/**
 * Events and deliveries (extension): what was sent where, with every attempt and answer, and
 * resends: one event (to one endpoint, or to every endpoint subscribed to it) or an endpoint's
 * events since a time. A resend is the delivery's run started again: same event, same webhook-id.
 */
export function webhookEventRoutes(
  deps: Needs<
    'db' | 'clock',
    | 'PUBLIC_BASE_URL'
    | 'KYC_MAX_RESUBMISSIONS'
    | 'WEBHOOK_RESEND_WINDOW'
    | 'WEBHOOK_RESENDS_PER_ENDPOINT'
    | 'WEBHOOK_RESENDS_PER_ORGANIZATION'
    | 'WEBHOOK_RUNS_PER_ENDPOINT'
    | 'WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION'
  >,
  workflows: WebhookWorkflows,
): AnyRoute[] {
  const { db } = deps;
  const settings = renderSettings(deps.config);
  const common = { tags: TAG, extension: true as const, auth: MANAGER };

  async function eventOf(ctx: Context, id: string) {
    const event = await findEvent(db, organizationOf(ctx), id);
    if (!event) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such event');
    return event;
  }
  async function endpointOf(ctx: Context, id: string) {
    const endpoint = await findEndpoint(db, organizationOf(ctx), id);
    if (!endpoint) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such webhook endpoint');
    return endpoint;
  }
  async function deliveriesPage(
    ctx: Context,
    of: { endpointId: string } | { eventId: string },
    query: { size: number; after?: string; status?: DeliveryStatus },
  ) {
    const after = positionOf(query.after);
    const page = await listDeliveries(db, organizationOf(ctx), of, {
      size: query.size,
      ...(after ? { after } : {}),
      ...(query.status ? { status: query.status } : {}),
    });
    const last = page.rows.at(-1);
    const params = new URLSearchParams({ size: String(query.size), ...(query.status ? { status: query.status } : {}) });
    if (last) params.set('after', encodePosition(last.created_at, last.id));
    ctx.body = { data: page.rows.map(deliveryView), links: { next: page.more ? `${ctx.path}?${params}` : null } };
  }

  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/webhooks/events',
      operationId: 'listWebhookEvents',
      summary: 'The organization’s events, newest first',
      request: {
        query: z.strictObject({
          size: Size,
          after: Cursor.optional(),
          type: EventTypeName.optional(),
          since: z.iso.datetime({ offset: true }).optional().meta({ description: 'Only events from this time on' }),
        }),
      },
      responses: {
        200: {
          description: 'A page of events',
          schema: z.strictObject({ data: z.array(WebhookEvent), links: PageLinks }).meta({ id: 'WebhookEventPage' }),
        },
      },
      async handler(ctx, { query }) {
        const after = positionOf(query.after);
        const page = await listEvents(
          db,
          organizationOf(ctx),
          { ...(query.type ? { type: query.type } : {}), ...(query.since ? { since: new Date(query.since) } : {}) },
          { size: query.size, ...(after ? { after } : {}) },
        );
        const last = page.rows.at(-1);
        const params = new URLSearchParams({ size: String(query.size) });
        if (query.type) params.set('type', query.type);
        if (query.since) params.set('since', query.since);
        if (last) params.set('after', encodePosition(last.occurred_at, last.id));
        ctx.body = {
          data: page.rows.map((event) => eventView(event, settings)),
          links: { next: page.more ? `${ctx.path}?${params}` : null },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/webhooks/events/{id}',
      operationId: 'getWebhookEvent',
      summary: 'An event, as it is delivered',
      request: { params: IdParams },
      responses: { 200: { description: 'The event', schema: WebhookEvent } },
      errors: { NOT_FOUND: 'no such event in the caller’s organization' },
      async handler(ctx, { params }) {
        ctx.body = eventView(await eventOf(ctx, params.id), settings);
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/webhooks/events/{id}/deliveries',
      operationId: 'listWebhookEventDeliveries',
      summary: 'Where an event was delivered, with every attempt',
      request: { params: IdParams, query: DeliveriesQuery },
      responses: { 200: { description: 'A page of deliveries, newest first', schema: DeliveryPage } },
      errors: { NOT_FOUND: 'no such event in the caller’s organization' },
      async handler(ctx, { params, query }) {
        await eventOf(ctx, params.id);
        await deliveriesPage(ctx, { eventId: params.id }, query);
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/webhooks/endpoints/{id}/deliveries',
      operationId: 'listWebhookEndpointDeliveries',
      summary: 'What was delivered to an endpoint, with every attempt',
      request: { params: IdParams, query: DeliveriesQuery },
      responses: { 200: { description: 'A page of deliveries, newest first', schema: DeliveryPage } },
      errors: { NOT_FOUND: 'no such endpoint in the caller’s organization' },
      async handler(ctx, { params, query }) {
        await endpointOf(ctx, params.id);
        await deliveriesPage(ctx, { endpointId: params.id }, query);
      },
    }),
    ...resendRoutes(deps, workflows, { eventOf, endpointOf }),
  ];
}

type Lookups = {
  eventOf: (ctx: Context, id: string) => Promise<WebhookEventRow>;
  endpointOf: (ctx: Context, id: string) => Promise<WebhookEndpointRow>;
};

function resendRoutes(
  deps: Needs<
    'db' | 'clock',
    | 'WEBHOOK_RESEND_WINDOW'
    | 'WEBHOOK_RESENDS_PER_ENDPOINT'
    | 'WEBHOOK_RESENDS_PER_ORGANIZATION'
    | 'WEBHOOK_RUNS_PER_ENDPOINT'
    | 'WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION'
  >,
  workflows: WebhookWorkflows,
  { eventOf, endpointOf }: Lookups,
): AnyRoute[] {
  const { db, clock, config } = deps;
  const budget = {
    windowMs: config.WEBHOOK_RESEND_WINDOW,
    perEndpoint: config.WEBHOOK_RESENDS_PER_ENDPOINT,
    perOrganization: config.WEBHOOK_RESENDS_PER_ORGANIZATION,
  };
  const common = { tags: TAG, extension: true as const, auth: MANAGER };
  /** Starts again what the resend restarted (coalescing what is still queued), within the budget; or 429. */
  async function resend(organizationId: string, pairs: { event: WebhookEventRow; endpoint: WebhookEndpointRow }[]) {
    const decided = await resendDeliveries(
      db,
      organizationId,
      pairs.map(({ event, endpoint }) => ({ eventId: event.id, endpointId: endpoint.id })),
      clock.now(),
      budget,
    );
    if ('refused' in decided)
      throw new ServiceError(
        ErrorCode.TOO_MANY_REQUESTS,
        `Resends would start more than ${decided.refused.over === 'ENDPOINT' ? `${budget.perEndpoint} deliveries of this endpoint` : `${budget.perOrganization} deliveries of the organization`} within WEBHOOK_RESEND_WINDOW: send it later`,
        [],
        { 'Retry-After': String(Math.ceil(decided.refused.retryAfterMs / 1000)) },
      );
    // Started here as far as each endpoint's WEBHOOK_RUNS_PER_ENDPOINT and the organization's
    // WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION allow; the rest are left to the dispatcher, which starts
    // them as runs end and attempts are made (a dead receiver's deliveries wait in Postgres, not as
    // runs in the task queues every tenant shares).
    const [live, untried] = await Promise.all([
      liveRuns(db, [...new Set(decided.restarted.map((d) => d.endpoint_id))]),
      untriedRuns(db, [organizationId], clock.now()),
    ]);
    let waiting = untried.get(organizationId) ?? 0;
    const now = decided.restarted.filter((d) => {
      const running = live.get(d.endpoint_id) ?? 0;
      if (running >= config.WEBHOOK_RUNS_PER_ENDPOINT || waiting >= config.WEBHOOK_UNTRIED_RUNS_PER_ORGANIZATION)
        return false;
      live.set(d.endpoint_id, running + 1);
      waiting += 1;
      return true;
    });
    await forEachConcurrently(now, 16, (delivery) =>
      workflows.resend({
        organizationId,
        deliveryId: delivery.id,
        generation: delivery.generation,
        eventId: delivery.event_id,
        endpointId: delivery.endpoint_id,
      }),
    );
    await markStarted(
      db,
      now.map((d) => d.id),
      clock.now(),
    );
    return { data: [...decided.restarted, ...decided.coalesced].map((delivery) => deliveryView(delivery)) };
  }
  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/webhooks/events/{id}/resend',
      operationId: 'resendWebhookEvent',
      summary: 'Send an event again',
      description:
        'To the endpoint named, or to every enabled endpoint subscribed to its type, now: a delivery waiting out its backoff after a failed attempt is tried again at once (an attempt already under way may still arrive, under the same webhook-id); one still queued (not tried since it was made or last resent) is the same delivery, answered as it is. Within WEBHOOK_RESEND_WINDOW resends may start at most WEBHOOK_RESENDS_PER_ENDPOINT deliveries of one endpoint and WEBHOOK_RESENDS_PER_ORGANIZATION of the organization (each endpoint named costs one at least): beyond, 429 with Retry-After, nothing sent.',
      request: { params: IdParams, body: z.strictObject({ endpoint_id: z.uuid().optional() }).optional() },
      responses: { 202: { description: 'The deliveries started again', schema: Resent } },
      errors: {
        NOT_FOUND: 'no such event, or endpoint, in the caller’s organization',
        CONFLICT: 'the endpoint named is disabled, or not subscribed to the event’s type',
        TOO_MANY_REQUESTS: 'past the resend budget of the endpoint or the organization (Retry-After)',
      },
      async handler(ctx, { params, body }) {
        const organizationId = organizationOf(ctx);
        const event = await eventOf(ctx, params.id);
        const endpoints = body?.endpoint_id
          ? [await endpointOf(ctx, body.endpoint_id)]
          : (await listEndpoints(db, organizationId)).filter((e) => subscribed(e, event));
        if (body?.endpoint_id && !subscribed(endpoints[0]!, event))
          throw new ServiceError(ErrorCode.CONFLICT, 'The endpoint is disabled or not subscribed to this event type');
        ctx.status = 202;
        ctx.body = await resend(
          organizationId,
          endpoints.map((endpoint) => ({ event, endpoint })),
        );
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/webhooks/endpoints/{id}/resend',
      operationId: 'resendWebhookEndpointEvents',
      summary: 'Send an endpoint every event since a time again',
      description: `The events of the types it is subscribed to, from \`since\` on; at most ${RESEND_MAX} per call (a later \`since\` for more). Deliveries still queued are coalesced, and the resend budget applies, as for one event's resend.`,
      request: { params: IdParams, body: z.strictObject({ since: z.iso.datetime({ offset: true }) }) },
      responses: { 202: { description: 'The deliveries started again', schema: Resent } },
      errors: {
        NOT_FOUND: 'no such endpoint in the caller’s organization',
        CONFLICT: 'the endpoint is disabled',
        BAD_REQUEST: `more than ${RESEND_MAX} events since then`,
        TOO_MANY_REQUESTS: 'past the resend budget of the endpoint or the organization (Retry-After)',
      },
      async handler(ctx, { params, body }) {
        const organizationId = organizationOf(ctx);
        const endpoint = await endpointOf(ctx, params.id);
        if (!endpoint.enabled) throw new ServiceError(ErrorCode.CONFLICT, 'The endpoint is disabled');
        const { rows: events, more } = await listEvents(
          db,
          organizationId,
          { types: endpoint.event_types, since: new Date(body.since) },
          { size: RESEND_MAX },
        );
        if (more)
          throw new ServiceError(
            ErrorCode.BAD_REQUEST,
            `More than ${RESEND_MAX} events since then: resend from a later time`,
          );
        ctx.status = 202;
        ctx.body = await resend(
          organizationId,
          events.map((event) => ({ event, endpoint })),
        );
      },
    }),
  ];
}

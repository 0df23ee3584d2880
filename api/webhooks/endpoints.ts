import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from '../../db/webhooks/endpoints';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { Permission } from '../../domain/rbac';
import { allowedFor, hostRefusal, OWN_ADDRESS_SETTINGS, servicePorts } from '../../providers/webhooks/addresses';
import { newSecret } from '../../providers/webhooks/signature';
import type { Needs } from '../deps';
import { IdempotencyKeyHeader } from '../middleware/idempotency';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { endpointView, EventTypeName, WebhookEndpoint, WebhookEndpointWithSecret } from './views';

export const MANAGER: RouteAuth = { schemes: ['user', 'api_key'], permission: Permission.WEBHOOKS_MANAGE };
export const TAG = ['webhooks'];

/** The organization the caller manages webhooks for (a platform key acts for none). */
export function organizationOf(ctx: Context): string {
  const organizationId = (ctx.state.caller as { organizationId: string | null }).organizationId;
  if (!organizationId) throw new ServiceError(ErrorCode.FORBIDDEN, 'A platform key manages no organization’s webhooks');
  return organizationId;
}

const Url = z
  .url({ protocol: /^https?$/ })
  .max(2_048)
  .meta({
    description: 'https (http only outside production); no credentials; not a private, loopback or link-local address',
  });
const EventTypes = z
  .array(EventTypeName)
  .min(1)
  .max(50)
  .refine((types) => new Set(types).size === types.length, 'each type once');
const Description = z
  .string()
  .max(500)
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'printable text, no control characters')
  .nullable();

const EndpointParams = z.strictObject({ id: z.uuid() });
const NO_ENDPOINT = 'No such webhook endpoint';

type EndpointDeps = Needs<
  'db' | 'clock',
  | 'NODE_ENV'
  | 'WEBHOOK_ALLOWED_ADDRESSES'
  | 'WEBHOOK_ENDPOINTS_MAX'
  | 'WEBHOOK_SECRET_GRACE'
  | 'PORT'
  | 'WORKER_METRICS_PORT'
  | 'FINANCING_ISSUERS'
  | (typeof OWN_ADDRESS_SETTINGS)[number]
>;

/** The URL's scheme, credentials and every address its host resolves to, or INVALID_PARAMS naming body.url. */
export async function checkUrl(
  config: Omit<EndpointDeps['config'], 'WEBHOOK_ENDPOINTS_MAX' | 'WEBHOOK_SECRET_GRACE'>,
  url: string,
): Promise<void> {
  const target = new URL(url);
  const refuse = (reason: string) => {
    throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
      { path: 'body.url', reason, sub_code: SubCode.NOT_ALLOWED },
    ]);
  };
  if (config.NODE_ENV === 'production' && target.protocol !== 'https:') refuse('must be https');
  if (target.username || target.password) refuse('must not carry credentials');
  // Aimed at one of the service's own ports (its API, metrics, Postgres, Temporal, providers): public addresses only.
  const allowed = allowedFor(target, config.WEBHOOK_ALLOWED_ADDRESSES, servicePorts(config));
  const refused = await hostRefusal(target.hostname, allowed);
  if (refused)
    refuse(allowed === config.WEBHOOK_ALLOWED_ADDRESSES ? refused : `${refused}: the port is one of the service's own`);
}
/**
 * Webhook endpoints (extension): an organization registers where its events go. The URL is
 * checked here (scheme, credentials, every address its host resolves to) and again at each
 * delivery, where the address connected to is the one checked.
 */
export function webhookEndpointRoutes(deps: EndpointDeps): AnyRoute[] {
  const { db, clock, config } = deps;

  const found = async (ctx: Context, id: string) => {
    const row = await findEndpoint(db, organizationOf(ctx), id);
    if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, NO_ENDPOINT);
    return row;
  };
  const common = { tags: TAG, extension: true as const, auth: MANAGER };

  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/v1/webhooks/endpoints',
      operationId: 'createWebhookEndpoint',
      summary: 'Register a webhook endpoint',
      description: `Events of the listed types are posted to the URL, signed per Standard Webhooks with the secret answered here (only here; Cache-Control: no-store). At most WEBHOOK_ENDPOINTS_MAX (${config.WEBHOOK_ENDPOINTS_MAX}) per organization. Honours Idempotency-Key: a retry answers the same endpoint and secret.`,
      idempotent: true,
      request: {
        headers: IdempotencyKeyHeader,
        body: z.strictObject({
          url: Url,
          event_types: EventTypes,
          description: Description.optional(),
          enabled: z.boolean().optional(),
        }),
      },
      responses: {
        201: { description: 'Registered; its secret is shown this once', schema: WebhookEndpointWithSecret },
      },
      errors: {
        CONFLICT: 'the organization holds its most endpoints already',
        FORBIDDEN: 'a platform key',
      },
      async handler(ctx, { body }) {
        const organizationId = organizationOf(ctx);
        await checkUrl(config, body.url);
        const row = await insertEndpoint(
          db,
          organizationId,
          {
            id: randomUUID(),
            url: body.url,
            description: body.description ?? null,
            event_types: body.event_types,
            enabled: body.enabled ?? true,
            secret: newSecret(),
          },
          config.WEBHOOK_ENDPOINTS_MAX,
        );
        if (!row)
          throw new ServiceError(ErrorCode.CONFLICT, `At most ${config.WEBHOOK_ENDPOINTS_MAX} webhook endpoints`);
        ctx.status = 201;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { ...endpointView(row), secret: row.secret };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/webhooks/endpoints',
      operationId: 'listWebhookEndpoints',
      summary: 'The organization’s webhook endpoints',
      responses: {
        200: {
          description: 'Every endpoint, oldest first (there are at most WEBHOOK_ENDPOINTS_MAX)',
          schema: z.strictObject({ data: z.array(WebhookEndpoint) }).meta({ id: 'WebhookEndpointList' }),
        },
      },
      async handler(ctx) {
        ctx.body = { data: (await listEndpoints(db, organizationOf(ctx))).map(endpointView) };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/v1/webhooks/endpoints/{id}',
      operationId: 'getWebhookEndpoint',
      summary: 'A webhook endpoint',
      request: { params: EndpointParams },
      responses: { 200: { description: 'The endpoint (never its secret)', schema: WebhookEndpoint } },
      errors: { NOT_FOUND: 'no such endpoint in the caller’s organization' },
      async handler(ctx, { params }) {
        ctx.body = endpointView(await found(ctx, params.id));
      },
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/v1/webhooks/endpoints/{id}',
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description: 'Enabling a disabled endpoint clears its reason and its run of failures.',
      request: {
        params: EndpointParams,
        body: z
          .strictObject({
            url: Url.optional(),
            event_types: EventTypes.optional(),
            description: Description.optional(),
            enabled: z.boolean().optional(),
          })
          .refine((b) => Object.keys(b).length > 0, 'at least one field to change'),
      },
      responses: { 200: { description: 'The endpoint as changed', schema: WebhookEndpoint } },
      errors: { NOT_FOUND: 'no such endpoint in the caller’s organization' },
      async handler(ctx, { params, body }) {
        const organizationId = organizationOf(ctx);
        if (body.url !== undefined) await checkUrl(config, body.url);
        const row = await updateEndpoint(db, organizationId, params.id, body, clock.now());
        if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, NO_ENDPOINT);
        ctx.body = endpointView(row);
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/v1/webhooks/endpoints/{id}',
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint',
      description: 'Its deliveries go with it; those still being retried end at their next attempt.',
      request: { params: EndpointParams },
      responses: { 204: { description: 'Deleted' } },
      errors: { NOT_FOUND: 'no such endpoint in the caller’s organization' },
      async handler(ctx, { params }) {
        if (!(await deleteEndpoint(db, organizationOf(ctx), params.id)))
          throw new ServiceError(ErrorCode.NOT_FOUND, NO_ENDPOINT);
        ctx.status = 204;
      },
    }),
    rotateRoute(deps),
  ];
}

function rotateRoute(deps: EndpointDeps): AnyRoute {
  const { db, clock, config } = deps;
  return defineRoute({
    tags: TAG,
    extension: true,
    auth: MANAGER,
    method: 'post',
    path: '/v1/webhooks/endpoints/{id}/secret/rotate',
    operationId: 'rotateWebhookEndpointSecret',
    summary: 'Rotate an endpoint’s signing secret',
    description:
      'Answers the new secret (only here; Cache-Control: no-store). Until previous_secret_expires_at (WEBHOOK_SECRET_GRACE) each message carries a signature by either secret, so a receiver can switch without losing one. Honours Idempotency-Key: a retried rotation answers the same secret instead of rotating again (which would end the grace of the secret before).',
    idempotent: true,
    request: { params: EndpointParams, headers: IdempotencyKeyHeader },
    responses: { 200: { description: 'The endpoint and its new secret', schema: WebhookEndpointWithSecret } },
    errors: { NOT_FOUND: 'no such endpoint in the caller’s organization' },
    async handler(ctx, { params }) {
      const now = clock.now();
      const graceUntil = new Date(now.getTime() + config.WEBHOOK_SECRET_GRACE);
      const row = await rotateSecret(db, organizationOf(ctx), params.id, newSecret(), graceUntil, now);
      if (!row) throw new ServiceError(ErrorCode.NOT_FOUND, NO_ENDPOINT);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { ...endpointView(row), secret: row.secret };
    },
  });
}

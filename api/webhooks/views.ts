import { z } from 'zod';
import type { WebhookAttemptRow, WebhookDeliveryRow } from '../../db/webhooks/delivery';
import type { WebhookEndpointRow } from '../../db/webhooks/endpoints';
import { endpointView as endpointFields } from '../../domain/webhooks/endpoints';
import { EVENT_TYPES } from '../../domain/webhooks/events';
import { isoOrNull as iso } from '../../domain/iso';

/** The webhook resources as the API answers them: endpoints, events, deliveries and their attempts. */

export const EventTypeName = z.enum(EVENT_TYPES).meta({ id: 'WebhookEventType' });

export const WebhookEndpoint = z
  .strictObject({
    id: z.uuid(),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(EventTypeName),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable().meta({
      description:
        'Why it is disabled: by the organization, or failing for WEBHOOK_DISABLE_AFTER (a webhook_endpoint.disabled event says so too)',
    }),
    failing_since: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'The first failed attempt of its current run of failures' }),
    backing_off_until: z.iso
      .datetime()
      .nullable()
      .meta({
        description:
          'After WEBHOOK_BACKOFF_AFTER_FAILURES failed attempts in a row: until when its deliveries wait (no ' +
          'connection is made; one attempt then probes it); null when it is not backing off',
      }),
    previous_secret_expires_at: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'After a rotation: until when messages are signed with the previous secret too' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookEndpoint' });

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().meta({
    description: 'Standard Webhooks signing secret (`whsec_` + base64 of 32 bytes): shown here only, keep it safe',
  }),
}).meta({ id: 'WebhookEndpointWithSecret' });

/** A webhook endpoint as the API answers it (domain/webhooks/endpoints.ts), typed by its schema. */
export const endpointView = (row: WebhookEndpointRow): z.infer<typeof WebhookEndpoint> =>
  endpointFields(row) as z.infer<typeof WebhookEndpoint>;

export const WebhookEvent = z
  .strictObject({
    id: z.uuid().meta({ description: 'Also the `webhook-id` header of every delivery of it' }),
    type: EventTypeName,
    timestamp: z.iso.datetime().meta({ description: 'When the state change committed' }),
    data: z.record(z.string(), z.unknown()).meta({ description: 'The resource as the API answers it, as committed' }),
  })
  .meta({ id: 'WebhookEvent' });

const Attempt = z
  .strictObject({
    attempted_at: z.iso.datetime(),
    status_code: z.number().int().nullable().meta({ description: 'The receiver’s answer; null when none came' }),
    duration_ms: z.number().int(),
    error: z.string().nullable().meta({ description: 'Why no answer came: timeout, connection, address refused' }),
    response_body: z
      .string()
      .nullable()
      .meta({
        description:
          'A short excerpt (at most 200 characters) of an answer that reads as a receiver’s: plain text or JSON of at ' +
          'most 512 bytes, control characters dropped, anything that reads as a token or key redacted; null for any ' +
          'other answer (its status alone is kept)',
      }),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDelivery = z
  .strictObject({
    id: z.uuid(),
    event_id: z.uuid(),
    endpoint_id: z.uuid(),
    status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']).meta({
      description: 'PENDING (being tried, retried with backoff) → SUCCEEDED (a 2xx) or FAILED (see last_error)',
    }),
    attempts: z.array(Attempt),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: z.iso.datetime(),
    completed_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

export function deliveryView(
  row: WebhookDeliveryRow & { attempt_list?: WebhookAttemptRow[] },
): z.infer<typeof WebhookDelivery> {
  return {
    id: row.id,
    event_id: row.event_id,
    endpoint_id: row.endpoint_id,
    status: row.status,
    attempts: (row.attempt_list ?? []).map((a) => ({
      attempted_at: a.attempted_at.toISOString(),
      status_code: a.status_code,
      duration_ms: a.duration_ms,
      error: a.error,
      response_body: a.response_body,
    })),
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    completed_at: iso(row.completed_at),
  };
}

/** Keyset cursors: base64url of `[ISO time, uuid]`; anything else is refused, never read as a position. */
const Position = z.tuple([z.iso.datetime(), z.uuid()]);
export const encodePosition = (at: Date, id: string) =>
  Buffer.from(JSON.stringify([at.toISOString(), id])).toString('base64url');
export function decodePosition(cursor: string): { at: Date; id: string } | undefined {
  try {
    const parsed = Position.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    return parsed.success ? { at: new Date(parsed.data[0]), id: parsed.data[1] } : undefined;
  } catch {
    return undefined;
  }
}
export const Cursor = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9_-]+$/)
  .meta({ description: 'Opaque: the `after` of a previous page’s links.next' });
export const PageLinks = z
  .strictObject({ next: z.string().nullable().meta({ description: 'The next (older) page; null on the last' }) })
  .meta({ id: 'WebhookPageLinks' });

import { isoOrNull as iso } from '../iso';

/** What an endpoint's view is drawn from: its row, or the `webhook_endpoint.disabled` event's snapshot of it. */
export interface EndpointFields {
  id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  backing_off_until: Date | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}
export const ENDPOINT_DATES = [
  'failing_since',
  'backing_off_until',
  'previous_secret_expires_at',
  'created_at',
  'updated_at',
] as const;

/** A webhook endpoint as the API answers it (never its secrets; the schema is in api/webhooks/views.ts). */
export function endpointView(row: EndpointFields) {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    failing_since: iso(row.failing_since),
    backing_off_until: iso(row.backing_off_until),
    previous_secret_expires_at: iso(row.previous_secret_expires_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

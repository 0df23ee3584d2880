import type { Knex } from 'knex';
import { preparedRows } from '../prepared';
import { newestFirst } from './pages';

/** An event of the outbox (written by the triggers of the webhooks migration). */
export interface WebhookEventRow {
  id: string;
  organization_id: string;
  type: string;
  resource_id: string;
  snapshot: Record<string, unknown>;
  occurred_at: Date;
  dispatched_at: Date | null;
}

/** A delivery whose workflow is to be started. */
export interface UnstartedDelivery {
  id: string;
  generation: number;
  organization_id: string;
  event_id: string;
  endpoint_id: string;
}

/**
 * The dispatcher's step, across organizations (it serves them all, as the retention schedules
 * do): up to `limit` undispatched events, locked so concurrent dispatchers take different ones,
 * get a delivery for each enabled endpoint of their organization subscribed to their type, and
 * are marked dispatched, in one statement (one round trip, however idle: it runs every poll).
 * Answers how many events it took.
 */
export async function dispatchEvents(db: Knex, limit: number, now: Date): Promise<number> {
  // Prepared: it runs every poll, idle or not, and planning it cost more than running it idle
  // (about 0.9 of 1.3 ms a call, logged under the repayments bench); its plan, the partial
  // index's range, does not hang on the values.
  const rows = await preparedRows(
    db,
    db.raw(
      `with taken as (
       select id from webhook_events where dispatched_at is null
        order by occurred_at limit ? for update skip locked
     ), delivered as (
       insert into webhook_deliveries (organization_id, event_id, endpoint_id)
       select e.organization_id, e.id, p.id
         from webhook_events e
         join taken t on t.id = e.id
         join webhook_endpoints p
           on p.organization_id = e.organization_id and p.enabled and e.type = any(p.event_types)
       on conflict (event_id, endpoint_id) do nothing
     )
     update webhook_events set dispatched_at = ? where id in (select id from taken) returning id`,
      [limit, now],
    ),
  );
  return rows.length;
}

/**
 * Deliveries whose workflow has not been started yet (just dispatched, or a start lost to a
 * crash), oldest first, but none of the organizations or endpoints in `except` (past their share
 * of starts for now, or holding their most runs).
 */
export const unstartedDeliveries = (
  db: Knex,
  limit: number,
  except: { organizations?: readonly string[]; endpoints?: readonly string[] } = {},
) =>
  db('webhook_deliveries')
    .whereNull('workflow_started_at')
    .modify((q) => {
      if (except.organizations?.length) q.whereNotIn('organization_id', except.organizations);
      if (except.endpoints?.length) q.whereNotIn('endpoint_id', except.endpoints);
    })
    .orderBy('created_at')
    .limit(limit)
    .select<UnstartedDelivery[]>('id', 'generation', 'organization_id', 'event_id', 'endpoint_id');

/** How many runs each endpoint has that have not ended (PENDING, started), over a partial index of just those. */
export async function liveRuns(db: Knex, endpointIds: readonly string[]): Promise<Map<string, number>> {
  if (endpointIds.length === 0) return new Map();
  const rows = await db('webhook_deliveries')
    .whereIn('endpoint_id', endpointIds)
    .where({ status: 'PENDING' })
    .whereNotNull('workflow_started_at')
    .groupBy('endpoint_id')
    .select<{ endpoint_id: string; n: string }[]>('endpoint_id', db.raw('count(*) as n'));
  return new Map(rows.map((row) => [row.endpoint_id, Number(row.n)]));
}

/**
 * How many runs each organization has started that have made no attempt yet in their current
 * generation (turned away for want of a slot, or waiting for their first turn), over a partial
 * index of just those. Runs to an endpoint that is backing off are not counted: they wait for its
 * time without costing anything, and counting them would let one organization's dead endpoints
 * hold back its own healthy ones. The dispatcher is a job of the whole service, not of a tenant,
 * so this reads every organization it is given.
 */
export async function untriedRuns(
  db: Knex,
  organizationIds: readonly string[],
  now: Date,
): Promise<Map<string, number>> {
  if (organizationIds.length === 0) return new Map();
  const rows = await db('webhook_deliveries as d')
    .join('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .whereIn('d.organization_id', organizationIds)
    .where('d.status', 'PENDING')
    .whereNotNull('d.workflow_started_at')
    .whereNull('d.tried_at')
    .where((q) => q.whereNull('e.backing_off_until').orWhere('e.backing_off_until', '<=', now))
    .groupBy('d.organization_id')
    .select<{ organization_id: string; n: string }[]>('d.organization_id', db.raw('count(*) as n'));
  return new Map(rows.map((row) => [row.organization_id, Number(row.n)]));
}

/** Deliveries whose run was started (or found already there). */
export async function markStarted(db: Knex, ids: readonly string[], now: Date): Promise<void> {
  if (ids.length > 0) await db('webhook_deliveries').whereIn('id', ids).update({ workflow_started_at: now });
}

export const findEvent = (db: Knex, organizationId: string, id: string) =>
  db('webhook_events').where({ organization_id: organizationId, id }).first<WebhookEventRow | undefined>();

export interface EventPosition {
  at: Date;
  id: string;
}

/** Events of an organization, newest first, keyset-paged; `since` bounds them from below. */
export async function listEvents(
  db: Knex,
  organizationId: string,
  filter: { type?: string; types?: readonly string[]; since?: Date },
  page: { size: number; after?: EventPosition },
): Promise<{ rows: WebhookEventRow[]; more: boolean }> {
  const q = db('webhook_events').where({ organization_id: organizationId });
  if (filter.type) q.where({ type: filter.type });
  if (filter.types) q.whereIn('type', filter.types);
  if (filter.since) q.where('occurred_at', '>=', filter.since);
  return newestFirst<WebhookEventRow>(q, 'occurred_at', page.size, page.after);
}

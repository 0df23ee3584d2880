import type { Knex } from 'knex';
import { newestFirst } from './pages';

/**
 * The queries of webhook delivery, one event to one endpoint (workflows/webhooks/delivery.ts):
 * the delivery rows, their attempts, the lists the API shows, and the resends that start a
 * delivery again.
 */

export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';

export interface WebhookDeliveryRow {
  id: string;
  organization_id: string;
  event_id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  generation: number;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  workflow_started_at: Date | null;
  /** When the current generation last finished an attempt; null while it is queued. */
  tried_at: Date | null;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookAttemptRow {
  organization_id: string;
  delivery_id: string;
  run_id: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_body: string | null;
}

export const findDelivery = (db: Knex, organizationId: string, id: string) =>
  db('webhook_deliveries').where({ organization_id: organizationId, id }).first<WebhookDeliveryRow | undefined>();

/** WEBHOOK_RESEND_WINDOW and the most deliveries resends may start again in it, per endpoint and per organization. */
export interface ResendBudget {
  windowMs: number;
  perEndpoint: number;
  perOrganization: number;
}

export type Resent =
  | { refused: { over: 'ENDPOINT' | 'ORGANIZATION'; retryAfterMs: number } }
  | { restarted: WebhookDeliveryRow[]; coalesced: WebhookDeliveryRow[] };

/**
 * A resend of these (event, endpoint) pairs, decided in one transaction under the organization's
 * resend lock (so concurrent resends of one organization, from any API instance, are counted one
 * after another):
 * - a delivery still queued (PENDING, never tried since it was made or last resent) is the same
 *   delivery: coalesced, answered as it is, not started again;
 * - every other one (tried and waiting out its backoff, ended, or an event from before the
 *   endpoint subscribed) becomes PENDING again in a new generation, for the caller to start its
 *   run (then markStarted, so a start that failed is left to the dispatcher);
 * - unless that would start more than the budget's deliveries of one endpoint, or of the
 *   organization, within its window (each endpoint named costs one at least): then nothing is
 *   changed and the answer is when enough of the window will have passed.
 * Events held while their deliveries turn PENDING: the retention's purge skips an event so held
 * (and sees the PENDING delivery once this commits); one it purged first is left out.
 */
export async function resendDeliveries(
  db: Knex,
  organizationId: string,
  pairs: readonly { eventId: string; endpointId: string }[],
  now: Date,
  budget: ResendBudget,
): Promise<Resent> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`webhook-resend:${organizationId}`]);
    const since = new Date(now.getTime() - budget.windowMs);
    await trx('webhook_resends').where({ organization_id: organizationId }).where('resent_at', '<', since).delete();
    const live = new Set(
      await trx('webhook_events')
        .where({ organization_id: organizationId })
        .whereIn('id', [...new Set(pairs.map((p) => p.eventId))])
        .forKeyShare()
        .pluck<string[]>('id'),
    );
    const wanted = pairs.filter((p) => live.has(p.eventId));
    const existing: WebhookDeliveryRow[] =
      wanted.length === 0
        ? []
        : await trx('webhook_deliveries')
            .where({ organization_id: organizationId })
            .whereIn(
              ['event_id', 'endpoint_id'],
              wanted.map((p) => [p.eventId, p.endpointId]),
            )
            .forUpdate()
            .select('*');
    const pairKey = (eventId: string, endpointId: string) => `${eventId}/${endpointId}`;
    const byPair = new Map(existing.map((row) => [pairKey(row.event_id, row.endpoint_id), row]));
    const coalesced: WebhookDeliveryRow[] = [];
    const restart: { eventId: string; endpointId: string }[] = [];
    for (const pair of wanted) {
      const row = byPair.get(pairKey(pair.eventId, pair.endpointId));
      if (row?.status === 'PENDING' && row.tried_at === null) coalesced.push(row);
      else restart.push(pair);
    }

    const cost = new Map<string, number>(pairs.map((p) => [p.endpointId, 0]));
    for (const pair of restart) cost.set(pair.endpointId, cost.get(pair.endpointId)! + 1);
    for (const [endpointId, n] of cost) cost.set(endpointId, Math.max(1, n));
    const used = await trx('webhook_resends')
      .where({ organization_id: organizationId })
      .where('resent_at', '>=', since)
      .groupBy('endpoint_id')
      .select<{ endpoint_id: string; deliveries: string; oldest: Date }[]>(
        'endpoint_id',
        trx.raw('sum(deliveries) as deliveries'),
        trx.raw('min(resent_at) as oldest'),
      );
    const retryAfter = (oldest: Date | undefined) =>
      Math.max(1_000, (oldest ? oldest.getTime() : now.getTime()) + budget.windowMs - now.getTime());
    const total = [...cost.values()].reduce((a, b) => a + b, 0);
    const usedTotal = used.reduce((a, u) => a + Number(u.deliveries), 0);
    if (usedTotal + total > budget.perOrganization) {
      const oldest = used.map((u) => u.oldest).sort((a, b) => a.getTime() - b.getTime())[0];
      return { refused: { over: 'ORGANIZATION', retryAfterMs: retryAfter(oldest) } } as const;
    }
    for (const [endpointId, n] of cost) {
      const mine = used.find((u) => u.endpoint_id === endpointId);
      if (Number(mine?.deliveries ?? 0) + n > budget.perEndpoint)
        return { refused: { over: 'ENDPOINT', retryAfterMs: retryAfter(mine?.oldest) } } as const;
    }
    await trx('webhook_resends').insert(
      [...cost].map(([endpointId, deliveries]) => ({
        organization_id: organizationId,
        endpoint_id: endpointId,
        resent_at: now,
        deliveries,
      })),
    );
    const restarted: WebhookDeliveryRow[] =
      restart.length === 0
        ? []
        : await trx('webhook_deliveries')
            .insert(
              restart.map((p) => ({ organization_id: organizationId, event_id: p.eventId, endpoint_id: p.endpointId })),
            )
            .onConflict(['event_id', 'endpoint_id'])
            .merge({
              status: 'PENDING',
              completed_at: null,
              workflow_started_at: null,
              tried_at: null,
              generation: trx.raw('webhook_deliveries.generation + 1'),
              updated_at: now,
            })
            .returning<WebhookDeliveryRow[]>('*');
    return { restarted, coalesced };
  });
}

/**
 * One attempt recorded, once however often its step runs (its run and attempt number are its key),
 * and the delivery's tally brought up to date.
 */
export async function recordAttempt(
  db: Knex,
  organizationId: string,
  generation: number,
  attempt: Omit<WebhookAttemptRow, 'organization_id'>,
): Promise<void> {
  await db.transaction(async (trx) => {
    const inserted = await trx('webhook_attempts')
      .insert({ ...attempt, organization_id: organizationId })
      .onConflict(['delivery_id', 'run_id', 'attempt'])
      .ignore()
      .returning('id');
    if (inserted.length === 0) return;
    await trx('webhook_deliveries')
      .where({ organization_id: organizationId, id: attempt.delivery_id, generation })
      .update({
        attempts: trx.raw('attempts + 1'),
        last_status_code: attempt.status_code,
        last_error: attempt.error,
        tried_at: attempt.attempted_at,
        updated_at: attempt.attempted_at,
      });
  });
}

/**
 * The delivery ended: SUCCEEDED (a 2xx) or FAILED (given up: another answer, the window over, the
 * endpoint gone), by the run of its current generation only (a resend's replaced run ends nothing).
 */
export async function finishDelivery(
  db: Knex,
  organizationId: string,
  id: string,
  generation: number,
  status: Exclude<DeliveryStatus, 'PENDING'>,
  now: Date,
  error?: string,
): Promise<void> {
  await db('webhook_deliveries')
    .where({ organization_id: organizationId, id, generation })
    .update({ status, completed_at: now, updated_at: now, ...(error ? { last_error: error } : {}) });
}

/** The attempts a listed delivery shows: its most recent (a delivery retried for days has dozens). */
export const ATTEMPTS_SHOWN = 20;

export interface DeliveryPosition {
  at: Date;
  id: string;
}

/** Deliveries of one endpoint or one event, newest first, keyset-paged, each with its attempts. */
export async function listDeliveries(
  db: Knex,
  organizationId: string,
  of: { endpointId: string } | { eventId: string },
  page: { size: number; after?: DeliveryPosition; status?: DeliveryStatus },
): Promise<{ rows: (WebhookDeliveryRow & { attempt_list: WebhookAttemptRow[] })[]; more: boolean }> {
  const q = db('webhook_deliveries').where({
    organization_id: organizationId,
    ...('endpointId' in of ? { endpoint_id: of.endpointId } : { event_id: of.eventId }),
  });
  if (page.status) q.where({ status: page.status });
  const { rows: shown, more } = await newestFirst<WebhookDeliveryRow>(q, 'created_at', page.size, page.after);
  const attempts =
    shown.length === 0
      ? []
      : await db
          .select<WebhookAttemptRow[]>('*')
          .from(
            db('webhook_attempts')
              .where({ organization_id: organizationId })
              .whereIn(
                'delivery_id',
                shown.map((r) => r.id),
              )
              .select(
                '*',
                db.raw('row_number() over (partition by delivery_id order by attempted_at desc, id desc) as recent'),
              )
              .as('a'),
          )
          .where('recent', '<=', ATTEMPTS_SHOWN)
          .orderBy([{ column: 'attempted_at' }, { column: 'id' }]);
  return {
    rows: shown.map((row) => ({ ...row, attempt_list: attempts.filter((a) => a.delivery_id === row.id) })),
    more,
  };
}

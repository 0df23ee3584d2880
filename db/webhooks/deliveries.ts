import type { Knex } from 'knex';
import { newestFirst } from './pages';

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

/**
 * The delivery of an event to an endpoint, PENDING again (a resend) or new (an event from before
 * the endpoint subscribed); the caller starts its run, then marks it started (markStarted), so a
 * start that failed leaves it to the dispatcher.
 */
export async function pendingDelivery(
  db: Knex,
  organizationId: string,
  eventId: string,
  endpointId: string,
  now: Date,
): Promise<WebhookDeliveryRow | undefined> {
  return db.transaction(async (trx) => {
    // The event held while its delivery turns PENDING: the retention's purge skips an event so
    // held (and sees the PENDING delivery once this commits); one it purged first is gone here.
    const event = await trx('webhook_events')
      .where({ organization_id: organizationId, id: eventId })
      .forKeyShare()
      .first('id');
    if (!event) return undefined;
    const [row] = await trx('webhook_deliveries')
      .insert({ organization_id: organizationId, event_id: eventId, endpoint_id: endpointId })
      .onConflict(['event_id', 'endpoint_id'])
      .merge({
        status: 'PENDING',
        completed_at: null,
        workflow_started_at: null,
        generation: trx.raw('webhook_deliveries.generation + 1'),
        updated_at: now,
      })
      .returning<WebhookDeliveryRow[]>('*');
    return row;
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

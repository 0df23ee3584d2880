import type { Knex } from 'knex';

/**
 * Deletes up to `limit` events that occurred before `cutoff`, oldest first, once dispatched and
 * none of their deliveries is still PENDING (a delivery being retried keeps its event); their
 * deliveries and attempts go with them (ON DELETE CASCADE). An event a resend holds (turning its
 * delivery PENDING) is skipped, not waited for. How many events went. Platform-wide: the
 * retention applies to every organization alike.
 */
export async function purgeWebhookEvents(db: Knex, cutoff: Date, limit: number): Promise<number> {
  const result = await db.raw(
    `delete from webhook_events where id in (
       select e.id from webhook_events e
        where e.occurred_at < ? and e.dispatched_at is not null
          and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'PENDING')
        order by e.occurred_at
        limit ?
        for update skip locked)`,
    [cutoff, limit],
  );
  return result.rowCount ?? 0;
}

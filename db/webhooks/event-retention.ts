import type { Knex } from 'knex';

/**
 * Deletes up to `limit` events that occurred before `cutoff`, oldest first, and returns how many
 * went. An event goes only once it has been dispatched and none of its deliveries is still
 * PENDING, because a delivery that is being retried still needs its event. The event's
 * deliveries and attempts are deleted with it by ON DELETE CASCADE. An event that a resend holds,
 * having made its delivery PENDING again, is skipped rather than waited for. The retention is
 * platform-wide: it applies to every organization alike.
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

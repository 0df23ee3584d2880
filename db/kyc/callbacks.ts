import type { Knex } from 'knex';

/**
 * KYC provider callback events (the mobile-money ones are db/mobile-money/callbacks.ts, the purge db/platform/callback-retention.ts).
 * Keyed by event id and application id without an organization: a callback carries none, and the
 * application was found by our job id (findApplicationByJobId).
 */

/**
 * Records a KYC callback event once (its id is unique; the caller scopes it to the application),
 * unless its application already has `cap` stored.
 */
export async function storeKycCallbackEvent(
  db: Knex,
  cap: number,
  event: { apiVersion: string; eventId: string; applicationId: string; raw: string },
): Promise<'stored' | 'duplicate' | 'over_cap'> {
  if (await db('kyc_callback_events').where({ event_id: event.eventId }).first('id')) return 'duplicate';
  const inserted = await db.raw(
    `with slot as (
       update kyc_applications set callbacks_stored = callbacks_stored + 1 where id = ? and callbacks_stored < ? returning id
     )
     insert into kyc_callback_events (api_version, event_id, application_id, raw_body)
     select ?, ?, slot.id, ? from slot
     on conflict (event_id) do nothing`,
    [event.applicationId, cap, event.apiVersion, event.eventId, event.raw],
  );
  if (inserted.rowCount > 0) return 'stored';
  return (await db('kyc_callback_events').where({ event_id: event.eventId }).first('id')) ? 'duplicate' : 'over_cap';
}

/** Forgets an event whose delivery failed, so that the provider's retry is taken as new. */
export async function forgetKycCallbackEvent(db: Knex, eventId: string): Promise<void> {
  await db('kyc_callback_events').where({ event_id: eventId }).del();
}

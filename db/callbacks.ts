import type { Knex } from 'knex';

/**
 * Raw provider callbacks: stored with what was done with them while their transaction or
 * application has fewer than a cap, so no caller can store an unbounded amount; purged after
 * a retention by the callback-retention schedule. Only callbacks addressed to a resource of
 * ours are ever stored (one with a wrong token or an unknown job is counted and logged).
 */
export interface MobileMoneyCallbackRecord {
  kind: 'STK' | 'B2C_RESULT' | 'B2C_TIMEOUT';
  transactionId: string;
  raw: string;
  body: unknown;
  disposition: string;
  note?: string;
}

/** Stores the callback unless its transaction already has `cap` stored; false when it was not stored. */
export async function storeMobileMoneyCallback(db: Knex, cap: number, record: MobileMoneyCallbackRecord): Promise<boolean> {
  const inserted = await db.raw(
    `insert into mobile_money_callbacks (kind, transaction_ref, raw, body, disposition, note)
     select ?, ?, ?, ?::jsonb, ?, ?
     where (select count(*) from mobile_money_callbacks where transaction_ref = ?) < ?`,
    [record.kind, record.transactionId, record.raw, JSON.stringify(record.body ?? null), record.disposition, record.note ?? null, record.transactionId, cap],
  );
  return inserted.rowCount > 0;
}

/** How many callbacks of one transaction are stored. */
export async function storedMobileMoneyCallbacks(db: Knex, transactionId: string): Promise<number> {
  const [row] = await db('mobile_money_callbacks').where({ transaction_ref: transactionId }).count<{ count: string }[]>('* as count');
  return Number(row?.count ?? 0);
}

/** Records a KYC callback event once (its event id is unique), unless its application already has `cap` stored. */
export async function storeKycCallbackEvent(
  db: Knex,
  cap: number,
  event: { apiVersion: string; eventId: string; applicationId: string; raw: string },
): Promise<'stored' | 'duplicate' | 'over_cap'> {
  const inserted = await db.raw(
    `insert into kyc_callback_events (api_version, event_id, application_id, raw_body)
     select ?, ?, ?, ?
     where (select count(*) from kyc_callback_events where application_id = ?) < ?
     on conflict (event_id) do nothing`,
    [event.apiVersion, event.eventId, event.applicationId, event.raw, event.applicationId, cap],
  );
  if (inserted.rowCount > 0) return 'stored';
  return (await db('kyc_callback_events').where({ event_id: event.eventId }).first('id')) ? 'duplicate' : 'over_cap';
}

/** Forgets an event whose delivery failed, so that the provider's retry is taken as new. */
export async function forgetKycCallbackEvent(db: Knex, eventId: string): Promise<void> {
  await db('kyc_callback_events').where({ event_id: eventId }).del();
}

/** Deletes callbacks received before `cutoff`, oldest first, at most `limit` rows of each table; how many went. */
export async function purgeCallbacks(db: Knex, cutoff: Date, limit: number): Promise<number> {
  let purged = 0;
  for (const table of ['mobile_money_callbacks', 'kyc_callback_events']) {
    const result = await db.raw(
      `delete from ${table} where id in (select id from ${table} where received_at < ? order by received_at limit ?)`,
      [cutoff, limit],
    );
    purged += result.rowCount ?? 0;
  }
  return purged;
}

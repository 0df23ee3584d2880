import type { Knex } from 'knex';

/**
 * The mobile-money provider's callbacks and what may be done with them. Stored with what was
 * done while their transaction has fewer than a cap; handed to its run while the transaction has
 * fewer signals than another; both counted by conditional updates, so concurrent requests cannot
 * pass either cap. Only callbacks addressed to a transaction of ours (id and token) are stored.
 * A callback names its transaction by id alone (it carries no organization). Purged after a
 * retention by db/platform/callback-retention.ts.
 */
export interface MobileMoneyCallbackRecord {
  kind: 'STK' | 'B2C_RESULT' | 'B2C_TIMEOUT' | 'B2C_STATUS' | 'B2C_STATUS_TIMEOUT';
  transactionId: string;
  raw: string;
  body: unknown;
  disposition: string;
  note?: string;
}

/** Stores the callback unless its transaction already has `cap` stored; false when it was not stored. */
export async function storeMobileMoneyCallback(
  db: Knex,
  cap: number,
  record: MobileMoneyCallbackRecord,
): Promise<boolean> {
  const result = await db.raw(
    `with slot as (
       update transactions set callbacks_stored = callbacks_stored + 1 where id = ? and callbacks_stored < ? returning id
     )
     insert into mobile_money_callbacks (kind, transaction_ref, raw, body, disposition, note)
     select ?, slot.id::text, ?, ?::jsonb, ?, ? from slot`,
    [
      record.transactionId,
      cap,
      record.kind,
      record.raw,
      JSON.stringify(record.body ?? null),
      record.disposition,
      record.note ?? null,
    ],
  );
  return result.rowCount > 0;
}

/** Claims one of the transaction's `max` signals to its run; false when they are spent. */
export async function claimCallbackSignal(db: Knex, transactionId: string, max: number): Promise<boolean> {
  const claimed = await db('transactions')
    .where({ id: transactionId })
    .where('callback_signals', '<', max)
    .increment('callback_signals', 1);
  return claimed > 0;
}

/** Gives back a claimed signal that Temporal could not take, so the provider's retry may use it. */
export async function returnCallbackSignal(db: Knex, transactionId: string): Promise<void> {
  await db('transactions')
    .where({ id: transactionId })
    .where('callback_signals', '>', 0)
    .decrement('callback_signals', 1);
}

/** Notes a B2C queue timeout once; true the first time. */
export async function noteQueueTimeout(db: Knex, transactionId: string): Promise<boolean> {
  return (
    (await db('transactions')
      .where({ id: transactionId })
      .whereNull('queue_timeout_at')
      .update({ queue_timeout_at: db.fn.now() })) > 0
  );
}

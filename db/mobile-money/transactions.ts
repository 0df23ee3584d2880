import type { Knex } from 'knex';
import type { TransactionStatus, TransactionType } from '../../domain/mobile-money/transaction';

/** A transactions row as stored (money in minor units; bigint columns arrive as strings). */
export interface TransactionRow {
  id: string;
  resource_id: string;
  organization_id: string;
  account_id: string;
  type: TransactionType;
  status: TransactionStatus;
  amount: string | number;
  fee_amount: string | number;
  currency: string;
  mobile_number: string;
  details: Record<string, unknown>;
  callback_token: string;
  checkout_request_id: string | null;
  merchant_request_id: string | null;
  conversation_id: string | null;
  mobilemoney_transaction_id: string | null;
  result_code: string | null;
  failure_reason: string | null;
  provider_request_attempted_at: Date | null;
  /** When the provider reported a B2C queue timeout (noted by the callback route). */
  queue_timeout_at: Date | null;
  transacted_at: Date | null;
  confirmed_at: Date | null;
  posted_at: Date | null;
  failed_at: Date | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The Transaction resource (spec 2) of a row. */
export function transactionView(row: TransactionRow) {
  return {
    id: row.id,
    resource_id: row.resource_id,
    status: row.status,
    mobilemoney_transaction_id: row.mobilemoney_transaction_id,
    amount: { value: Number(row.amount), currency: row.currency },
    fee_amount: { value: Number(row.fee_amount), currency: row.currency },
    failure_reason: row.failure_reason,
    transacted_at: iso(row.transacted_at),
    confirmed_at: iso(row.confirmed_at),
    posted_at: iso(row.posted_at),
    failed_at: iso(row.failed_at),
    details: row.details,
  };
}
export type TransactionView = ReturnType<typeof transactionView>;

export const findTransaction = (db: Knex | Knex.Transaction, id: string) => db('transactions').where({ id }).first<TransactionRow | undefined>();

/** Whether a receipt is recorded on a transaction other than `exceptId` (receipts are unique). */
export async function receiptTaken(db: Knex, receipt: string, exceptId: string): Promise<boolean> {
  return (await db('transactions').where({ mobilemoney_transaction_id: receipt }).whereNot({ id: exceptId }).first('id')) !== undefined;
}

/** Whether a CheckoutRequestID belongs to a transaction other than `exceptId`. */
export async function checkoutRequestTaken(db: Knex, checkoutRequestId: string, exceptId: string): Promise<boolean> {
  return (await db('transactions').where({ checkout_request_id: checkoutRequestId }).whereNot({ id: exceptId }).first('id')) !== undefined;
}

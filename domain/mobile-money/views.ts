import type { TransactionStatus } from './transactions';
import { isoOrNull as iso } from '../iso';

/** What the Transaction resource is drawn from: a transactions row, or its snapshot in a webhook event. */
export interface TransactionFields {
  id: string;
  resource_id: string;
  status: TransactionStatus;
  mobilemoney_transaction_id: string | null;
  amount: string | number;
  fee_amount: string | number;
  currency: string;
  failure_reason: string | null;
  transacted_at: Date | null;
  confirmed_at: Date | null;
  posted_at: Date | null;
  failed_at: Date | null;
  details: Record<string, unknown>;
}

/**
 * The Transaction resource (spec 2) of a row: the API's answer and a webhook event's data are
 * one rendering (its schema, for the OpenAPI document, is api/mobile-money/views.ts).
 */
export function transactionView(row: TransactionFields) {
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

/** The timestamp columns a snapshot carries as text, to read back as dates. */
export const TRANSACTION_DATES = ['transacted_at', 'confirmed_at', 'posted_at', 'failed_at'] as const;

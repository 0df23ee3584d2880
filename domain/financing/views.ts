/** A financing invoice as the API answers it, from its row or a webhook event's snapshot of one. */
export interface InvoiceFields<S extends string = string> {
  id: string;
  document_id: string;
  status: S;
  amount_minor_units: string | number | null;
  currency: string | null;
  issued_date: string | null;
  due_date: string | null;
  details: Record<string, unknown>;
  failure_reason: string | null;
  created_at: Date;
}

export function invoiceView<S extends string>(row: InvoiceFields<S>) {
  return {
    id: row.id,
    document_id: row.document_id,
    amount_minor_units: row.amount_minor_units === null ? null : Number(row.amount_minor_units),
    currency: row.currency,
    details: row.details,
    due_date: row.due_date,
    issued_date: row.issued_date,
    status: row.status,
    created_at: row.created_at.toISOString(),
    failure_reason: row.failure_reason,
  };
}
export const INVOICE_DATES = ['created_at'] as const;

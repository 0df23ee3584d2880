import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ExtractionOutcome } from '../../domain/financing/invoice-extraction';

/** Statuses of a financing invoice (README, Invoice financing). */
export const InvoiceStatus = {
  /** An extraction is running: the extracted fields are null until it ends. */
  PENDING: 'PENDING',
  /** The extraction found an amount, a currency, an issue and a due date. extracted_at. */
  EXTRACTED: 'EXTRACTED',
  /** The provider could not read it, gave nothing usable, or stayed unavailable (failure_reason). */
  FAILED: 'FAILED',
  /** The document was not in the store when its upload URL expired (and a grace after). */
  NOT_UPLOADED: 'NOT_UPLOADED',
} as const;
export type InvoiceStatus = (typeof InvoiceStatus)[keyof typeof InvoiceStatus];

export interface FinancingInvoiceRow {
  id: string;
  organization_id: string;
  merchant_id: string;
  document_id: string;
  status: InvoiceStatus;
  extraction: number;
  amount_minor_units: string | null;
  currency: string | null;
  issued_date: string | null;
  due_date: string | null;
  details: Record<string, unknown>;
  failure_reason: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  extracted_at: Date | null;
  /** When its recent extractions began (those within the limit's window when the last one began). */
  extractions_begun_at: Date[];
}

/** The extracted fields, cleared while an extraction runs. */
const CLEARED = {
  amount_minor_units: null,
  currency: null,
  issued_date: null,
  due_date: null,
  details: {},
  failure_reason: null,
  extracted_at: null,
};

const COLUMNS = [
  'id',
  'organization_id',
  'merchant_id',
  'document_id',
  'status',
  'extraction',
  'amount_minor_units',
  'currency',
  'details',
  'failure_reason',
  'created_by',
  'created_at',
  'updated_at',
  'extracted_at',
  'extractions_begun_at',
];

/** An invoice; its dates read as the calendar dates they are (db/knex.ts). */
function selectInvoice(db: Knex) {
  return db('financing_invoices').select(...COLUMNS, 'issued_date', 'due_date');
}

export function findInvoice(
  db: Knex,
  organizationId: string,
  merchantId: string,
  id: string,
): Promise<FinancingInvoiceRow | undefined> {
  return selectInvoice(db).where({ organization_id: organizationId, merchant_id: merchantId, id }).first();
}

/**
 * What asking for an extraction did: registered the invoice, began a re-extraction, found one
 * running, or refused a re-extraction over the limit (retryAfterMs: when the oldest extraction
 * counted leaves the window).
 */
export type ExtractionRequest = 'REGISTERED' | 'REEXTRACTING' | 'IN_PROGRESS' | 'LIMITED';

/** How many extractions of one document may begin in a window (EXTRACTION_LIMIT, EXTRACTION_LIMIT_WINDOW). */
export interface ExtractionLimit {
  max: number;
  windowMs: number;
}

/** No limit: for callers that register on the service's behalf (fixtures); the API passes its configured one. */
const UNLIMITED: ExtractionLimit = { max: 2 ** 31 - 1, windowMs: 1 };

/**
 * Asks for an extraction of the merchant's document (the caller checked it is the merchant's):
 * the first time, the invoice is registered PENDING with extraction 1; once an extraction has
 * ended, the invoice goes back to PENDING with the next number and its fields cleared (the same
 * id), unless `limit.max` extractions already began in the window; while one runs (PENDING),
 * nothing changes. One statement, under the invoice row's lock: two calls at once can neither both
 * begin one nor both pass the limit (its times are on the row itself, pruned to the window).
 */
export async function requestExtraction(
  db: Knex,
  organizationId: string,
  merchantId: string,
  documentId: string,
  createdBy: string,
  now: Date,
  limit: ExtractionLimit = UNLIMITED,
): Promise<{ invoice: FinancingInvoiceRow; request: ExtractionRequest; retryAfterMs?: number }> {
  const since = new Date(now.getTime() - limit.windowMs);
  // An ended extraction seen after a skip (it ended in between) is asked again; twice is plenty.
  for (let attempt = 1; ; attempt += 1) {
    const { rows } = await db.raw<{ rows: { id: string; inserted: boolean }[] }>(
      `insert into financing_invoices
         (id, organization_id, merchant_id, document_id, status, extraction, created_by, created_at, updated_at,
          extractions_begun_at)
       values (?, ?, ?, ?, 'PENDING', 1, ?, ?, ?, array[?::timestamptz])
       on conflict (document_id) do update set
         status = 'PENDING', extraction = financing_invoices.extraction + 1, updated_at = excluded.updated_at,
         amount_minor_units = null, currency = null, issued_date = null, due_date = null, details = '{}',
         failure_reason = null, extracted_at = null,
         extractions_begun_at = array(
           select t from unnest(financing_invoices.extractions_begun_at) t where t > ? order by t
         ) || excluded.updated_at
       where financing_invoices.status <> 'PENDING'
         and (select count(*) from unnest(financing_invoices.extractions_begun_at) t where t > ?) < ?
       returning id, (xmax = 0) as inserted`,
      [randomUUID(), organizationId, merchantId, documentId, createdBy, now, now, now, since, since, limit.max],
    );
    const changed = rows[0];
    const invoice: FinancingInvoiceRow | undefined = await selectInvoice(db)
      .where({ organization_id: organizationId, merchant_id: merchantId, document_id: documentId })
      .first();
    if (!invoice) throw new Error('the invoice vanished after its extraction was asked for');
    if (changed) return { invoice, request: changed.inserted ? 'REGISTERED' : 'REEXTRACTING' };
    if (invoice.status === InvoiceStatus.PENDING) return { invoice, request: 'IN_PROGRESS' };
    // Ended: skipped for the limit, unless it ended after the statement saw it running.
    const recent = invoice.extractions_begun_at.filter((t) => t > since).sort((a, b) => a.getTime() - b.getTime());
    if (recent.length >= limit.max) {
      const frees = recent[recent.length - limit.max]!.getTime() + limit.windowMs;
      return { invoice, request: 'LIMITED', retryAfterMs: frees - now.getTime() };
    }
    if (attempt >= 2) return { invoice, request: 'IN_PROGRESS' };
  }
}

/** What an extraction is about: the invoice's current extraction number and its document. */
export function findExtractionJob(
  db: Knex,
  organizationId: string,
  invoiceId: string,
): Promise<
  | {
      status: InvoiceStatus;
      extraction: number;
      document_id: string;
      object_key: string;
      content_type: string;
      size_bytes: string;
      upload_expires_at: Date;
    }
  | undefined
> {
  return db('financing_invoices as i')
    .join('financing_documents as d', 'd.id', 'i.document_id')
    .where({ 'i.organization_id': organizationId, 'i.id': invoiceId })
    .first(
      'i.status',
      'i.extraction',
      'i.document_id',
      'd.object_key',
      'd.content_type',
      'd.size_bytes',
      'd.upload_expires_at',
    );
}

/**
 * Records how extraction `extraction` ended, if it is still the one asked for and the invoice is
 * still PENDING (a re-extraction asked meanwhile makes this one's outcome moot). Answers whether
 * it was recorded; recording twice changes nothing.
 */
export async function recordExtraction(
  db: Knex,
  organizationId: string,
  invoiceId: string,
  extraction: number,
  outcome: ExtractionOutcome,
  now: Date,
): Promise<boolean> {
  const fields =
    outcome.status === 'EXTRACTED'
      ? {
          ...CLEARED,
          amount_minor_units: outcome.amountMinorUnits,
          currency: outcome.currency,
          issued_date: outcome.issuedDate,
          due_date: outcome.dueDate,
          details: JSON.stringify(outcome.details),
          extracted_at: now,
        }
      : { ...CLEARED, failure_reason: outcome.status === 'FAILED' ? outcome.reason : null };
  const updated = await db('financing_invoices')
    .where({ organization_id: organizationId, id: invoiceId, extraction, status: 'PENDING' })
    .update({ ...fields, status: outcome.status, updated_at: now });
  return updated > 0;
}

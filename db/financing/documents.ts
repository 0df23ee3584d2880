import type { Knex } from 'knex';
import { groupCommits } from '../../domain/concurrency';

export type DocumentStatus = 'AWAITING_UPLOAD' | 'UPLOADED' | 'NEVER_UPLOADED';

export interface FinancingDocumentRow {
  id: string;
  organization_id: string;
  merchant_id: string;
  document_type: string;
  content_type: string;
  size_bytes: string;
  object_key: string;
  status: DocumentStatus;
  created_by: string;
  created_at: Date;
  upload_expires_at: Date;
  uploaded_at: Date | null;
  /** The merchant's running totals up to this document (see the presign totals migration). */
  presigned_count: string;
  presigned_bytes: string;
  /** An invoice registered it (set by a trigger on the invoice). */
  registered: boolean;
  /** The SHA-256 (hex) of its kept copy, once kept. */
  sha256: string | null;
}

type NewDocument = Pick<
  FinancingDocumentRow,
  'id' | 'merchant_id' | 'document_type' | 'content_type' | 'object_key' | 'created_by' | 'upload_expires_at'
> & { size_bytes: number };

/** A merchant's presign quota (config: UPLOAD_QUOTA_PENDING, UPLOAD_QUOTA_BYTES, UPLOAD_QUOTA_WINDOW). */
export interface PresignQuota {
  /** Uploads presigned and still pending: the URL still valid, no invoice registered on the document. */
  pending: number;
  /** How long a presigned URL is valid (UPLOAD_URL_TTL): an upload is pending that long at most. */
  urlTtlMs: number;
  /** Bytes presigned in the last `windowMs`. */
  bytes: number;
  windowMs: number;
}

/** A presign refused by the quota: which part, and when it would fit (the oldest pending URL expires, bytes age out). */
export interface OverQuota {
  over: ('PENDING' | 'BYTES')[];
  retryAfterMs: number;
}

interface Presign {
  row: Record<string, unknown> & { id: string; organization_id: string; merchant_id: string; size_bytes: number };
  now: Date;
  /** Set by the write that held it: undefined when recorded. */
  refused?: OverQuota;
}

/**
 * Records documents presigned for upload, awaiting it, within each merchant's quota, with group
 * commit: documents presigned at the same moment are decided and inserted together by one call
 * of `financing_presign` (migration 20261206100000), one round trip and one commit. It takes each
 * merchant's advisory lock first, so presigns of one merchant (from any API instance) are counted
 * one after another and can never pass the quota together; the count reads the merchant's running
 * totals (each a step in an index), never its history: pending is what was presigned within the
 * URL's validity less what was registered since (equal to "URL still valid, not registered" while
 * UPLOAD_URL_TTL stays as it was). Each call settles once its own row is committed, or answers why
 * it was refused (nothing is recorded) and when it would fit.
 */
export function documentWriter(
  db: Knex,
  quota: PresignQuota,
): (organizationId: string, document: NewDocument, now: Date) => Promise<OverQuota | undefined> {
  const write = groupCommits<Presign>(
    async (presigns) => {
      const { rows } = await db.raw<{ rows: { document_id: string; refused_by: OverQuota['over'] }[] }>(
        'select document_id, refused_by from financing_presign(?::jsonb, ?, ?, ?, ?)',
        [
          JSON.stringify(presigns.map((presign) => presign.row)),
          quota.pending,
          quota.bytes,
          quota.windowMs,
          quota.urlTtlMs,
        ],
      );
      const refusals = new Map(rows.map((row) => [row.document_id, row.refused_by]));
      for (const presign of presigns) {
        const over = refusals.get(presign.row.id);
        // Never taken for recorded: a document the function did not answer fails its presign.
        if (!over) throw new Error('financing_presign did not answer for a document of its batch');
        presign.refused =
          over.length > 0 ? { over, retryAfterMs: await retryAfter(db, presign, over, quota) } : undefined;
      }
    },
    { maxBatch: 64, maxInFlight: 2 },
  );
  return async (organizationId, document, now) => {
    const presign: Presign = { row: { ...document, organization_id: organizationId, created_at: now }, now };
    await write(presign);
    return presign.refused;
  };
}

/**
 * When a refused presign would fit: the oldest pending URL expires; enough of the oldest bytes
 * leave the window for this size (the whole window when even that is not enough).
 */
async function retryAfter(
  db: Knex,
  { row, now }: Presign,
  over: OverQuota['over'],
  quota: PresignQuota,
): Promise<number> {
  const waits: number[] = [];
  if (over.includes('PENDING')) {
    // The oldest pending upload (as counted: presigned within the URL's validity, not registered)
    // leaves the count when that validity ends.
    const oldest: { created_at: Date } | undefined = await db('financing_documents')
      .where({ organization_id: row.organization_id, merchant_id: row.merchant_id, registered: false })
      .where('created_at', '>', new Date(now.getTime() - quota.urlTtlMs))
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'presigned_count', order: 'asc' },
      ])
      .first('created_at');
    waits.push(oldest ? oldest.created_at.getTime() + quota.urlTtlMs - now.getTime() : quota.urlTtlMs);
  }
  if (over.includes('BYTES')) {
    const since = new Date(now.getTime() - quota.windowMs);
    // The oldest document whose leaving the window (with all older ones) makes room for this size.
    const { rows } = await db.raw<{ rows: { created_at: Date }[] }>(
      `select created_at from (
         select created_at,
                sum(size_bytes) over (order by created_at, id) as freed,
                sum(size_bytes) over () as used
           from financing_documents
          where organization_id = ? and merchant_id = ? and created_at > ?
       ) w
       where used - freed + ? <= ?
       order by created_at limit 1`,
      [row.organization_id, row.merchant_id, since, row.size_bytes, quota.bytes],
    );
    const at = rows[0]?.created_at;
    waits.push(at ? at.getTime() + quota.windowMs - now.getTime() : quota.windowMs);
  }
  return Math.max(1, ...waits);
}

/** The merchant's document of that type, or undefined: another merchant's or organization's is not found. */
export function findMerchantDocument(
  db: Knex,
  organizationId: string,
  merchantId: string,
  id: string,
  documentType: string,
): Promise<FinancingDocumentRow | undefined> {
  return db('financing_documents')
    .where({ organization_id: organizationId, merchant_id: merchantId, id, document_type: documentType })
    .first();
}

/** What the store held settles the document: UPLOADED (once) or NEVER_UPLOADED (after its wait). */
export async function settleDocument(
  db: Knex,
  organizationId: string,
  id: string,
  outcome: { status: 'UPLOADED'; uploadedAt: Date } | { status: 'NEVER_UPLOADED' },
): Promise<void> {
  await db('financing_documents')
    .where({ organization_id: organizationId, id })
    .whereNot({ status: 'UPLOADED' })
    .update(
      outcome.status === 'UPLOADED'
        ? { status: 'UPLOADED', uploaded_at: outcome.uploadedAt }
        : { status: 'NEVER_UPLOADED' },
    );
}

/**
 * Records the SHA-256 of a document's kept copy unless one is recorded already, and answers the
 * recorded one: the first read of the copy fixes what every later read must find. Undefined when
 * there is no such document.
 */
export async function keepDocumentDigest(
  db: Knex,
  organizationId: string,
  id: string,
  sha256: string,
): Promise<string | undefined> {
  const [row] = await db('financing_documents')
    .where({ organization_id: organizationId, id })
    .update({ sha256: db.raw('coalesce(sha256, ?)', [sha256]) })
    .returning<{ sha256: string }[]>('sha256');
  return row?.sha256;
}

/** The SHA-256 recorded for a document's kept copy; undefined when none is (or there is no such document). */
export async function documentDigest(db: Knex, organizationId: string, id: string): Promise<string | undefined> {
  const row = await db('financing_documents')
    .where({ organization_id: organizationId, id })
    .first<{ sha256: string | null } | undefined>('sha256');
  return row?.sha256 ?? undefined;
}

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
  row: Record<string, unknown> & { organization_id: string; merchant_id: string; size_bytes: number };
  now: Date;
  /** Set by the write that held it: undefined when recorded. */
  refused?: OverQuota;
}

/**
 * Records documents presigned for upload, awaiting it, within each merchant's quota, with group
 * commit: documents presigned at the same moment are decided and inserted together, one
 * transaction and one commit (presigning is otherwise bound by a commit per upload). The
 * transaction takes each merchant's advisory lock first, so presigns of one merchant (from any API
 * instance) are counted one after another and can never pass the quota together. Each call
 * settles once its own row is committed, or answers why it was refused (nothing is recorded).
 */
export function documentWriter(
  db: Knex,
  quota: PresignQuota,
): (organizationId: string, document: NewDocument, now: Date) => Promise<OverQuota | undefined> {
  const write = groupCommits<Presign>(
    (presigns) =>
      db.transaction(async (trx) => {
        const byMerchant = new Map<string, Presign[]>();
        for (const presign of presigns) {
          presign.refused = undefined;
          const key = `financing-presign:${presign.row.organization_id}:${presign.row.merchant_id}`;
          byMerchant.set(key, [...(byMerchant.get(key) ?? []), presign]);
        }
        const admitted: Presign['row'][] = [];
        const refused: { presign: Presign; over: OverQuota['over'] }[] = [];
        for (const [key, group] of [...byMerchant].sort(([a], [b]) => a.localeCompare(b))) {
          await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [key]);
          const { organization_id: organizationId, merchant_id: merchantId } = group[0]!.row;
          const now = group[0]!.now;
          const usage = await presignUsage(trx, organizationId, merchantId, now, quota);
          for (const presign of group) {
            const over: OverQuota['over'] = [];
            if (usage.pending >= quota.pending) over.push('PENDING');
            if (usage.bytes + presign.row.size_bytes > quota.bytes) over.push('BYTES');
            if (over.length > 0) refused.push({ presign, over });
            else {
              usage.pending += 1;
              usage.bytes += presign.row.size_bytes;
              admitted.push(presign.row);
            }
          }
        }
        if (admitted.length > 0) await trx('financing_documents').insert(admitted);
        for (const { presign, over } of refused)
          presign.refused = { over, retryAfterMs: await retryAfter(trx, presign, over, quota) };
      }),
    { maxBatch: 64, maxInFlight: 2 },
  );
  return async (organizationId, document, now) => {
    const presign: Presign = { row: { ...document, organization_id: organizationId, created_at: now }, now };
    await write(presign);
    return presign.refused;
  };
}

/**
 * The merchant's pending uploads and the bytes presigned in the window, as of `now`, from the
 * running totals (migration 20261206100000): what was presigned since a moment is the latest
 * total less the total at that moment, each one index step, however long the merchant's history.
 * Pending: presigned within the URL's validity, less those registered since (a partial index).
 * This equals "URL still valid, not registered" while UPLOAD_URL_TTL stays as it was; after a
 * change, the current TTL is the one counted.
 */
async function presignUsage(
  db: Knex.Transaction,
  organizationId: string,
  merchantId: string,
  now: Date,
  quota: PresignQuota,
): Promise<{ pending: number; bytes: number }> {
  const validSince = new Date(now.getTime() - quota.urlTtlMs);
  const windowSince = new Date(now.getTime() - quota.windowMs);
  /** The merchant's running total of `column` as of its latest document, or as of a moment (a named binding). */
  const total = (column: 'presigned_count' | 'presigned_bytes', asOf?: 'validSince' | 'windowSince') =>
    `coalesce((select ${column} from financing_documents
                where organization_id = :organizationId and merchant_id = :merchantId
                      ${asOf ? `and created_at <= :${asOf}` : ''}
                order by created_at desc, presigned_count desc limit 1), 0)`;
  const { rows } = await db.raw<{ rows: { pending: string; bytes: string }[] }>(
    `select ${total('presigned_count')} - ${total('presigned_count', 'validSince')}
            - (select count(*) from financing_documents
                where organization_id = :organizationId and merchant_id = :merchantId
                  and registered and created_at > :validSince) as pending,
            ${total('presigned_bytes')} - ${total('presigned_bytes', 'windowSince')} as bytes`,
    { organizationId, merchantId, validSince, windowSince },
  );
  return { pending: Number(rows[0]!.pending), bytes: Number(rows[0]!.bytes) };
}

/**
 * When a refused presign would fit: the oldest pending URL expires; enough of the oldest bytes
 * leave the window for this size (the whole window when even that is not enough).
 */
async function retryAfter(
  db: Knex.Transaction,
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

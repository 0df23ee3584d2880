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
}

type NewDocument = Pick<
  FinancingDocumentRow,
  'id' | 'merchant_id' | 'document_type' | 'content_type' | 'object_key' | 'created_by' | 'upload_expires_at'
> & { size_bytes: number };

/**
 * Records documents presigned for upload, awaiting it, with group commit: documents presigned at
 * the same moment are inserted together, one statement and one commit (presigning is otherwise
 * bound by a commit per upload). Each call settles only once its own row is committed.
 */
export function documentWriter(db: Knex): (organizationId: string, document: NewDocument, now: Date) => Promise<void> {
  const write = groupCommits<Record<string, unknown>>(
    async (rows) => {
      await db('financing_documents').insert(rows);
    },
    { maxBatch: 64, maxInFlight: 2 },
  );
  return (organizationId, document, now) => write({ ...document, organization_id: organizationId, created_at: now });
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

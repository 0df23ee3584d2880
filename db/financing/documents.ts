import type { Knex } from 'knex';

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

/** A document presigned for upload, awaiting it. */
export async function createDocument(
  db: Knex,
  organizationId: string,
  document: Pick<
    FinancingDocumentRow,
    'id' | 'merchant_id' | 'document_type' | 'content_type' | 'object_key' | 'created_by' | 'upload_expires_at'
  > & { size_bytes: number },
  now: Date,
): Promise<void> {
  await db('financing_documents').insert({ ...document, organization_id: organizationId, created_at: now });
}

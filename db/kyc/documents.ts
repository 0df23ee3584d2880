import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** The document images of an application, stored here and passed to workflows by reference. */
export type KycDocumentKind = 'SELFIE' | 'DOCUMENT_FRONT' | 'DOCUMENT_BACK' | 'LIVENESS';

export interface KycDocumentRow {
  kind: KycDocumentKind;
  position: number;
  content_type: string;
  content: Buffer;
}

/** An image to store: its kind, its place among the frames, and the decoded bytes. */
export interface NewKycDocument {
  kind: string;
  position: number;
  image: { contentType: string; content: Buffer };
}

/** Replaces the application's documents with `documents` (two statements: run it in the submission's transaction). */
export async function replaceDocuments(
  trx: Knex.Transaction,
  organizationId: string,
  applicationId: string,
  documents: NewKycDocument[],
): Promise<void> {
  await trx('kyc_documents').where({ organization_id: organizationId, application_id: applicationId }).del();
  await trx('kyc_documents').insert(
    documents.map(({ kind, position, image }) => ({
      id: randomUUID(),
      organization_id: organizationId,
      application_id: applicationId,
      kind,
      position,
      content_type: image.contentType,
      content: image.content,
      sha256: createHash('sha256').update(image.content).digest('hex'),
    })),
  );
}

/** The application's documents with their content, by kind then position. */
export function findDocuments(db: Knex, organizationId: string, applicationId: string): Promise<KycDocumentRow[]> {
  return db('kyc_documents')
    .where({ organization_id: organizationId, application_id: applicationId })
    .orderBy(['kind', 'position'])
    .select<KycDocumentRow[]>('kind', 'position', 'content_type', 'content');
}

/**
 * The first image (by position) of each of `kinds` the application has: with `content`, its
 * bytes; without, only that it is there (nothing large is read).
 */
export async function firstImages(
  db: Knex,
  organizationId: string,
  applicationId: string,
  kinds: KycDocumentKind[],
  content: boolean,
): Promise<Map<KycDocumentKind, Buffer | undefined>> {
  const rows: { kind: KycDocumentKind; content?: Buffer }[] = await db('kyc_documents')
    .distinctOn('kind')
    .where({ organization_id: organizationId, application_id: applicationId })
    .whereIn('kind', kinds)
    .orderBy(['kind', 'position'])
    .select(content ? ['kind', 'content'] : ['kind']);
  return new Map(rows.map((row) => [row.kind, row.content]));
}

/** Just the kinds and bytes, in the same order: what a submission to the provider sends. */
export function findDocumentContents(
  db: Knex,
  organizationId: string,
  applicationId: string,
): Promise<Pick<KycDocumentRow, 'kind' | 'content'>[]> {
  return db('kyc_documents')
    .where({ organization_id: organizationId, application_id: applicationId })
    .orderBy(['kind', 'position'])
    .select<Pick<KycDocumentRow, 'kind' | 'content'>[]>('kind', 'content');
}

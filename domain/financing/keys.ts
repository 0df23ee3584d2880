/**
 * Where a financing document lives in the object store. Two keys per document, both ours (a
 * client can neither choose nor guess them, and a presigned URL's signature covers its key):
 *
 * - its **upload key**, `uploads/<organization>/<digest of the merchant id>/<document id>`: one
 *   per presign (the document id is a random UUID), written only through that presign's URL,
 *   which may replace it until it expires;
 * - its **document key**, the same under `documents/`: written once by the service, create-only,
 *   with the bytes it read from the upload and checked, and never presigned for writing. Once
 *   there, it is the document: registration checks it and the extraction provider reads it, and
 *   the upload is no longer read.
 */
export const UPLOAD_PREFIX = 'uploads/';
export const DOCUMENT_PREFIX = 'documents/';

/** The upload key of a document (merchantDigest: a digest of the merchant id, made by the caller). */
export const uploadKey = (organizationId: string, merchantDigest: string, documentId: string) =>
  `${UPLOAD_PREFIX}${organizationId}/${merchantDigest}/${documentId}`;

/**
 * The document key of an upload key. A key presigned before uploads had their own prefix (under
 * `documents/`) is its own document key: its URL was create-only (`If-None-Match: *` signed), so
 * what it holds cannot be replaced.
 */
export const documentKey = (objectKey: string) =>
  objectKey.startsWith(UPLOAD_PREFIX) ? `${DOCUMENT_PREFIX}${objectKey.slice(UPLOAD_PREFIX.length)}` : objectKey;

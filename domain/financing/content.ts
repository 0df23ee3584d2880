/**
 * What a financing document may be, and how its stored bytes are told apart: each media type the
 * presign accepts has the signature ("magic number") its files begin with. A type without a
 * signature here cannot be accepted: the record below must name one for each.
 */
export const DOCUMENT_CONTENT_TYPES = ['application/pdf', 'image/jpeg', 'image/png'] as const;
export type DocumentContentType = (typeof DOCUMENT_CONTENT_TYPES)[number];

const SIGNATURES: Record<DocumentContentType, { name: string; bytes: readonly number[] }> = {
  /** `%PDF-`, at the very start (readers tolerate leading junk; we do not). */
  'application/pdf': { name: 'PDF', bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] },
  /** SOI and the first marker's 0xFF. */
  'image/jpeg': { name: 'JPEG', bytes: [0xff, 0xd8, 0xff] },
  /** The eight-byte PNG signature. */
  'image/png': { name: 'PNG', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
};

/** How many of a document's first bytes the check reads. */
export const SIGNATURE_BYTES = Math.max(...Object.values(SIGNATURES).map((s) => s.bytes.length));

/** What the store holds for a document: its first bytes, its size and the content type it was stored with. */
export interface StoredDocument {
  head: Uint8Array;
  sizeBytes: number;
  contentType?: string;
}

/**
 * Why the stored document is not the one presigned, in words for the merchant, or undefined when
 * it is: the size presigned exactly, the content type declared, and first bytes that are that
 * type's signature (HTML stored as image/png is refused here, not by a failed extraction later).
 */
export function storedDocumentProblem(
  declared: { contentType: string; sizeBytes: number },
  stored: StoredDocument,
): string | undefined {
  if (stored.sizeBytes !== declared.sizeBytes)
    return `The uploaded document's size (${stored.sizeBytes} bytes) is not the size presigned (${declared.sizeBytes} bytes)`;
  if (stored.contentType !== declared.contentType)
    return `The uploaded document was stored as ${stored.contentType ?? 'no content type'}, not as the ${declared.contentType} presigned`;
  const signature = SIGNATURES[declared.contentType as DocumentContentType];
  if (!signature) return `The uploaded document's content type ${declared.contentType} is not accepted`;
  const matches =
    stored.head.length >= signature.bytes.length && signature.bytes.every((byte, i) => stored.head[i] === byte);
  return matches
    ? undefined
    : `The uploaded document is not a ${signature.name}: its first bytes are not a ${signature.name} signature ` +
        `(declared ${declared.contentType})`;
}

import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { documentWriter, type OverQuota } from '../../db/financing/documents';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { DOCUMENT_CONTENT_TYPES } from '../../domain/financing/content';
import { uploadKey } from '../../domain/financing/keys';
import type { FinancingCaller } from '../auth/caller';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';

/** A financing user acting for the merchant in the path: merchant-scoped permission through the issuer's resource-access provider. */
export const MERCHANT_WRITE: RouteAuth = {
  schemes: ['financing'],
  merchant: { param: 'merchantId', permission: 'financing.write' },
};
export const MerchantPath = z.object({
  merchantId: z.string().min(1).max(255).meta({ description: 'The backend merchant id (1 to 255 characters)' }),
});

/** What may be uploaded: the document types, and the media types (PDF, JPEG, PNG) a document may be. */
export const DOCUMENT_TYPES = ['INVOICE'] as const;
export const CONTENT_TYPES = DOCUMENT_CONTENT_TYPES;

/** Retry-After, in whole seconds (at least one), for a wait in milliseconds. */
export const retryAfter = (ms: number) => ({ 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) });

function overQuota(refused: OverQuota): ServiceError {
  const what = refused.over
    .map((part) =>
      part === 'PENDING'
        ? 'too many presigned uploads not yet registered'
        : 'too many bytes presigned in the quota window',
    )
    .join(' and ');
  return new ServiceError(
    ErrorCode.TOO_MANY_REQUESTS,
    `Upload quota reached: ${what}; register or let expire the pending ones, or wait (Retry-After)`,
    [],
    retryAfter(refused.retryAfterMs),
  );
}

/** A presigned URL's validity as signed: whole seconds, at least one. */
const urlTtlSeconds = (ttlMs: number) => Math.max(1, Math.round(ttlMs / 1000));

const PresignRequest = (maxBytes: number) =>
  z.strictObject({
    document_type: z.enum(DOCUMENT_TYPES).meta({ description: 'INVOICE (the only type so far)' }),
    content_type: z.enum(CONTENT_TYPES).meta({ description: 'application/pdf, image/jpeg or image/png' }),
    size_bytes: z
      .number()
      .int()
      .positive()
      .max(maxBytes)
      .meta({ description: `The exact size the client will upload, 1 to ${maxBytes} bytes (UPLOAD_MAX_BYTES)` }),
  });

export const PresignedUpload = z
  .object({
    upload_ref: z.uuid().meta({ description: 'The document id: register the invoice with it (document_id)' }),
    url: z.url().meta({
      description:
        'Where to upload: `PUT url` with `Content-Type: <content_type>` and the document as the body (exactly ' +
        'size_bytes bytes; the Content-Length any HTTP client sends) before expires_at; nothing else is needed. The ' +
        'store refuses another content type, another size, another key, or a late upload (403).',
    }),
    expires_at: z.iso.datetime(),
    upload_headers: z.record(z.string(), z.string()).meta({
      description:
        'Extension: the headers signed into url that the client sets itself: only Content-Type (the declared ' +
        'content_type). Content-Length is signed too; HTTP clients send it with the body.',
    }),
  })
  .meta({ id: 'PresignedUpload' });

/**
 * The presign route (spec 4.5): a URL to upload one financing document to. We choose the object's
 * key, one per presign, from the organization, a digest of the merchant id and the document id,
 * which is a random UUID. So a client can neither choose another's key nor guess it, and nothing
 * but this presign's URL writes the object. The row records the document as awaiting upload,
 * owned by the merchant and its organization.
 */
export function presignRoutes(
  deps: Needs<
    'db' | 'clock' | 'providers',
    'UPLOAD_MAX_BYTES' | 'UPLOAD_QUOTA_BYTES' | 'UPLOAD_QUOTA_PENDING' | 'UPLOAD_QUOTA_WINDOW' | 'UPLOAD_URL_TTL'
  >,
): AnyRoute[] {
  const { db, config, clock, providers } = deps;
  const createDocument = documentWriter(db, {
    pending: config.UPLOAD_QUOTA_PENDING,
    urlTtlMs: urlTtlSeconds(config.UPLOAD_URL_TTL) * 1000,
    bytes: config.UPLOAD_QUOTA_BYTES,
    windowMs: config.UPLOAD_QUOTA_WINDOW,
  });
  return [
    defineRoute({
      method: 'post',
      path: '/v1/financing/merchants/{merchantId}/uploads/presign',
      operationId: 'presignFinancingUpload',
      summary: 'A presigned upload for a merchant document',
      description:
        'Answers a presigned PUT valid for UPLOAD_URL_TTL: `PUT url` with `Content-Type: <content_type>` and the ' +
        'document as the body, nothing more. Content-Type and Content-Length are signed (the declared type, the exact ' +
        'size declared): the store refuses another type or size, another key, or a late upload. Signing exact headers ' +
        'rather than a POST policy with content-length-range: one plain PUT from any client, and an exact size is ' +
        'stricter than a range. The key is ours and new for each presign (a random document id), written by nothing ' +
        'but this URL. A second PUT within the URL’s validity is accepted by the store and harmless: S3 cannot make a ' +
        'presigned PUT create-only without a header the client would have to add (If-None-Match), so instead the ' +
        'service keeps its own copy of the document when its extraction first finds it: the bytes it read and checked ' +
        '(size, content type, signature) are written create-only under a key no URL can write, the upload is deleted, ' +
        'and from then on registration checks and the extraction provider reads only that copy. Before that, a second ' +
        'PUT is the merchant replacing its own upload (same type and size), checked when copied; after it, it changes ' +
        'nothing. A quota per merchant bounds what may be presigned: ' +
        'UPLOAD_QUOTA_PENDING uploads presigned and still pending (URL valid, no invoice registered on them), and ' +
        'UPLOAD_QUOTA_BYTES presigned in UPLOAD_QUOTA_WINDOW (rolling); beyond either, 429 with Retry-After and ' +
        'nothing is presigned. When registered, the stored document must be what was presigned (see registration).',
      tags: ['financing'],
      auth: MERCHANT_WRITE,
      request: { params: MerchantPath, body: PresignRequest(config.UPLOAD_MAX_BYTES) },
      responses: { 201: { description: 'Presigned', schema: PresignedUpload } },
      errors: {
        TOO_MANY_REQUESTS:
          `the merchant's presign quota: UPLOAD_QUOTA_PENDING (${config.UPLOAD_QUOTA_PENDING}) uploads pending (URL ` +
          `still valid, not registered), or UPLOAD_QUOTA_BYTES (${config.UPLOAD_QUOTA_BYTES}) bytes presigned in ` +
          `UPLOAD_QUOTA_WINDOW (rolling); Retry-After: when the oldest pending URL expires or enough bytes leave the window`,
      },
      async handler(ctx, { params, body }) {
        const caller = ctx.state.caller as FinancingCaller;
        const organizationId = caller.organizationId!;
        const id = randomUUID();
        const merchantDigest = createHash('sha256').update(params.merchantId).digest('hex').slice(0, 32);
        const key = uploadKey(organizationId, merchantDigest, id);
        const now = clock.now();
        const expiresInSeconds = urlTtlSeconds(config.UPLOAD_URL_TTL);
        const { url, expiresAt, headers } = await providers.storage.presignPut({
          key,
          contentType: body.content_type,
          sizeBytes: body.size_bytes,
          expiresInSeconds,
        });
        const refused = await createDocument(
          organizationId,
          {
            id,
            merchant_id: params.merchantId,
            document_type: body.document_type,
            content_type: body.content_type,
            size_bytes: body.size_bytes,
            object_key: key,
            created_by: caller.subject,
            upload_expires_at: expiresAt,
          },
          now,
        );
        if (refused) throw overQuota(refused);
        ctx.status = 201;
        ctx.body = { upload_ref: id, url, expires_at: expiresAt.toISOString(), upload_headers: headers };
      },
    }),
  ];
}

import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { documentWriter, type OverQuota } from '../../db/financing/documents';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { DOCUMENT_CONTENT_TYPES } from '../../domain/financing/content';
import type { FinancingCaller } from '../auth/caller';
import type { AppDeps } from '../deps';
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
        'A presigned PUT: send exactly size_bytes bytes with upload_headers before expires_at. The store refuses ' +
        'anything else (another type, size or key, too late, or a second upload: the first one stays).',
    }),
    expires_at: z.iso.datetime(),
    upload_headers: z.record(z.string(), z.string()).meta({
      description:
        'Extension: the headers the PUT must carry, as signed: Content-Type (the declared content_type) and ' +
        '`If-None-Match: *` (create-only, so an uploaded document cannot be replaced).',
    }),
  })
  .meta({ id: 'PresignedUpload' });

/**
 * Presigned document uploads (spec 4.5). The object's key is ours (organization, a digest of the
 * merchant id, the document id), so a client can neither choose nor guess another's; the row
 * records the document as awaiting upload, owned by the merchant and its organization.
 */
export function uploadRoutes(deps: AppDeps): AnyRoute[] {
  const { db, config, clock, providers } = deps;
  const createDocument = documentWriter(db, {
    pending: config.UPLOAD_QUOTA_PENDING,
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
        'Answers a presigned PUT (Content-Type, Content-Length and If-None-Match: * signed: the exact size declared, ' +
        'create-only) valid for ' +
        'UPLOAD_URL_TTL. Signing exact headers rather than a POST policy with content-length-range: one plain PUT from ' +
        'any client, and an exact size is stricter than a range. A quota per merchant bounds what may be presigned: ' +
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
        const merchantKey = createHash('sha256').update(params.merchantId).digest('hex').slice(0, 32);
        const key = `documents/${organizationId}/${merchantKey}/${id}`;
        const now = clock.now();
        const expiresInSeconds = Math.max(1, Math.round(config.UPLOAD_URL_TTL / 1000));
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

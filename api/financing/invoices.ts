import { z } from 'zod';
import { invoiceView } from '../../domain/financing/views';
import { type FinancingDocumentRow, findMerchantDocument } from '../../db/financing/documents';
import { type FinancingInvoiceRow, findInvoice, InvoiceStatus, requestExtraction } from '../../db/financing/invoices';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { SIGNATURE_BYTES, storedDocumentProblem } from '../../domain/financing/content';
import { documentKey } from '../../domain/financing/keys';
import type { FinancingCaller } from '../auth/caller';
import type { Needs } from '../deps';
import type { FinancingWorkflows } from './workflows';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { MERCHANT_WRITE, MerchantPath, retryAfter } from './presign';

/** Reading a merchant's invoices: `financing.read` on the merchant. */
const MERCHANT_READ: RouteAuth = {
  schemes: ['financing'],
  merchant: { param: 'merchantId', permission: 'financing.read' },
};

const STATUSES = Object.values(InvoiceStatus) as [InvoiceStatus, ...InvoiceStatus[]];

export const FinancingInvoice = z
  .object({
    id: z.uuid(),
    document_id: z.uuid(),
    amount_minor_units: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'In the currency’s minor units; null until an extraction found it (EXTRACTED)' }),
    currency: z.string().nullable().meta({ description: 'ISO 4217 code; null until EXTRACTED' }),
    details: z.record(z.string(), z.unknown()).meta({
      description:
        'What else the extraction read, when found: invoice_id, vendor_name, customer_name, amount_due_minor_units, ' +
        'sub_total_minor_units, total_tax_minor_units (in the total’s currency), confidence; {} until EXTRACTED',
    }),
    due_date: z.iso.date().nullable().meta({ description: 'null until EXTRACTED' }),
    issued_date: z.iso.date().nullable().meta({ description: 'null until EXTRACTED' }),
    status: z.enum(STATUSES).meta({
      description:
        'PENDING (an extraction is running) → EXTRACTED, FAILED (failure_reason says why) or NOT_UPLOADED (the ' +
        'document was not in the store when its upload URL expired, plus DOCUMENT_UPLOAD_GRACE). Another POST on the ' +
        'document after an ended extraction makes it PENDING again.',
    }),
    created_at: z.iso.datetime(),
    failure_reason: z.string().nullable().meta({ description: 'Extension, when FAILED: why, in words' }),
  })
  .meta({ id: 'FinancingInvoice' });

const InvoicePath = MerchantPath.extend({ invoiceId: z.uuid() });
const RegisterInvoice = z.strictObject({
  document_id: z.uuid().meta({ description: 'The upload_ref of the merchant’s presigned upload' }),
});

const view = (row: FinancingInvoiceRow): z.infer<typeof FinancingInvoice> => invoiceView(row);

/** A window in words: `1 hour`, `15 minutes`, `30 seconds`. */
function span(ms: number): string {
  const [size, unit] =
    ms % 3_600_000 === 0
      ? [ms / 3_600_000, 'hour']
      : ms % 60_000 === 0
        ? [ms / 60_000, 'minute']
        : [Math.ceil(ms / 1000), 'second'];
  return `${size} ${unit}${size === 1 ? '' : 's'}`;
}

/**
 * The stored document must be the one presigned: its size exactly, its content type, and first
 * bytes that are that type's signature; otherwise 400 naming document_id (nothing is registered
 * and nothing reaches the provider). Once the run has kept its own copy (domain/financing/keys),
 * that copy is what is checked, never the upload again. Not uploaded yet, or a store that does not
 * answer: the run checks it the same way before the provider sees it.
 */
async function checkStoredDocument(
  deps: Needs<'providers' | 'logger'>,
  document: FinancingDocumentRow,
  requestId: unknown,
) {
  const { storage } = deps.providers;
  const key = documentKey(document.object_key);
  let stored;
  try {
    stored =
      (await storage.readStart(key, SIGNATURE_BYTES)) ??
      (key === document.object_key ? undefined : await storage.readStart(document.object_key, SIGNATURE_BYTES));
  } catch (error) {
    deps.logger.warn({ err: error, req_id: requestId, document_id: document.id }, 'document store not read');
    return;
  }
  if (!stored) return;
  const problem = storedDocumentProblem(
    { contentType: document.content_type, sizeBytes: Number(document.size_bytes) },
    stored,
  );
  if (problem)
    throw new ServiceError(ErrorCode.INVALID_PARAMS, 'The uploaded document is not the one presigned', [
      { path: 'body.document_id', reason: problem, sub_code: SubCode.INVALID_VALUE },
    ]);
}

/**
 * Financing invoices (spec 4.5): registration and re-extraction of a merchant's uploaded
 * document, and reading one (extension). What a POST does depends only on the invoice's state:
 * none yet, registered (201); its last extraction ended, re-extracted (200, PENDING again, same
 * id); an extraction running, answered as it is (200) and nothing new begins.
 */
export function invoiceRoutes(
  deps: Needs<'db' | 'clock' | 'providers' | 'logger', 'EXTRACTION_LIMIT' | 'EXTRACTION_LIMIT_WINDOW'>,
  workflows: FinancingWorkflows,
): AnyRoute[] {
  const { db, config, clock, providers } = deps;
  const limit = { max: config.EXTRACTION_LIMIT, windowMs: config.EXTRACTION_LIMIT_WINDOW };
  return [
    defineRoute({
      method: 'post',
      path: '/v1/financing/merchants/{merchantId}/invoices',
      operationId: 'registerFinancingInvoice',
      summary: 'Register a financing invoice on an uploaded document, or re-extract it',
      description:
        'The first POST on a document registers its invoice (201, PENDING) and starts its extraction ' +
        '(`invoice-extraction/<document id>`): the document must be in the store as presigned (it is waited for until ' +
        'its upload URL expires, plus DOCUMENT_UPLOAD_GRACE), then the extraction provider reads it. A POST on a ' +
        'document whose last extraction has ended (EXTRACTED, FAILED, NOT_UPLOADED) re-extracts it: the same invoice, ' +
        'PENDING again with its extracted fields cleared (200). A POST while an extraction is running changes nothing ' +
        'and answers the invoice, PENDING (200). Follow the extraction with GET …/invoices/{invoiceId}. Each ' +
        'extraction is a paid analysis: at most EXTRACTION_LIMIT of one document begin in EXTRACTION_LIMIT_WINDOW ' +
        '(rolling; the registration counts), beyond which a re-extraction is 429 with Retry-After and the invoice ' +
        'keeps its result. An uploaded document must be what was presigned (its size, content type, and first bytes ' +
        'that are the declared type’s signature: %PDF-, PNG, JPEG): otherwise 400 naming document_id, and nothing is ' +
        'registered; one uploaded after its registration is checked alike and its extraction FAILED without analysis.',
      tags: ['financing'],
      auth: MERCHANT_WRITE,
      request: { params: MerchantPath, body: RegisterInvoice },
      responses: {
        201: { description: 'Registered; its extraction has begun', schema: FinancingInvoice },
        200: { description: 'Re-extracting, or an extraction was already running', schema: FinancingInvoice },
      },
      errors: {
        INVALID_PARAMS:
          'the uploaded document is not the one presigned: its first bytes are not the declared content type’s ' +
          'signature (HTML stored as image/png), or its stored size or content type differs (invalid_params names ' +
          'body.document_id)',
        NOT_FOUND: 'no such document of the merchant (another merchant’s or organization’s documents are not found)',
        TOO_MANY_REQUESTS:
          `a re-extraction beyond EXTRACTION_LIMIT (${config.EXTRACTION_LIMIT}) extractions of the document in ` +
          'EXTRACTION_LIMIT_WINDOW (rolling); Retry-After: when the oldest of them leaves the window',
        SERVICE_UNAVAILABLE: 'no invoice-extraction provider is configured',
      },
      async handler(ctx, { params, body }) {
        if (!providers.extraction)
          throw new ServiceError(ErrorCode.SERVICE_UNAVAILABLE, 'Invoice extraction is not configured');
        const caller = ctx.state.caller as FinancingCaller;
        const organizationId = caller.organizationId!;
        const document = await findMerchantDocument(db, organizationId, params.merchantId, body.document_id, 'INVOICE');
        if (!document) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such document of the merchant');
        await checkStoredDocument(deps, document, ctx.state.requestId);
        const { invoice, request, retryAfterMs } = await requestExtraction(
          db,
          organizationId,
          params.merchantId,
          document.id,
          caller.subject,
          clock.now(),
          limit,
        );
        if (request === 'LIMITED')
          throw new ServiceError(
            ErrorCode.TOO_MANY_REQUESTS,
            `Too many extractions of this document: at most ${limit.max} in ${span(limit.windowMs)}; ` +
              'the invoice keeps its result',
            [],
            retryAfter(retryAfterMs ?? limit.windowMs),
          );
        await workflows.askForExtraction(invoice, request);
        ctx.status = request === 'REGISTERED' ? 201 : 200;
        if (request === 'REGISTERED')
          ctx.set(
            'Location',
            `/v1/financing/merchants/${encodeURIComponent(params.merchantId)}/invoices/${invoice.id}`,
          );
        ctx.body = view(invoice);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/financing/merchants/{merchantId}/invoices/{invoiceId}',
      operationId: 'getFinancingInvoice',
      summary: 'One of the merchant’s financing invoices (extension)',
      description: 'Where a client follows an extraction to its end: PENDING until EXTRACTED, FAILED or NOT_UPLOADED.',
      extension: true,
      tags: ['financing'],
      auth: MERCHANT_READ,
      request: { params: InvoicePath },
      responses: { 200: { description: 'The invoice', schema: FinancingInvoice } },
      errors: { NOT_FOUND: 'no such invoice of the merchant' },
      async handler(ctx, { params }) {
        const caller = ctx.state.caller as FinancingCaller;
        const invoice = await findInvoice(db, caller.organizationId!, params.merchantId, params.invoiceId);
        if (!invoice) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such invoice of the merchant');
        ctx.body = view(invoice);
      },
    }),
  ];
}

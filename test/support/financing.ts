import { strict as assert } from 'node:assert';
import { createHash, randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { harness } from './harness';
import { call, type Reply } from './http';
import { until } from './money';
import { bearer, financingToken } from './tokens';

export const merchant = DEMO.merchant;
export const invoicesPath = (merchantId: string = merchant.id) =>
  `/v1/financing/merchants/${encodeURIComponent(merchantId)}/invoices`;
export const presignPath = (merchantId: string = merchant.id) =>
  `/v1/financing/merchants/${encodeURIComponent(merchantId)}/uploads/presign`;

/** A financing token of `subject` acting for the demo organization. */
export const financingHeaders = async (subject: string = merchant.financingSubject) =>
  bearer(
    await financingToken('financing', subject, {
      organization_id: merchant.organization_id,
      permissions: ['financing.write:ORG', 'financing.read:ORG'],
    }),
  );

/**
 * A PDF whose text the extraction simulator reads (its "OCR" finds these lines). `lines` replace
 * or add to the defaults; a unique line keeps every document's bytes apart.
 */
export function invoicePdf(lines: Record<string, string | undefined> = {}): Buffer {
  const fields: Record<string, string | undefined> = {
    'Invoice number': `INV-${randomUUID().slice(0, 8)}`,
    Vendor: 'Kariakoo Traders',
    Customer: 'Nairobi Wholesale Ltd',
    Total: 'KES 1,250.50',
    'Invoice date': '2026-11-01',
    'Due date': '2026-12-01',
    ...lines,
  };
  const text = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  return Buffer.from(`%PDF-1.7\n${text}\n%%EOF\n`, 'latin1');
}

/** Where a request goes: another merchant than the demo one, another API instance than the harness's. */
export interface Target {
  merchantId?: string;
  baseUrl?: string;
}

/** A new merchant of the demo organization the demo subject may act for (its own limits and quotas). */
export async function newMerchant(): Promise<string> {
  const { db, idp } = harness();
  const id = `mrc-${randomUUID().slice(0, 12)}`;
  await db('merchants').insert({ id, organization_id: merchant.organization_id, name: `Merchant ${id}` });
  await db('merchant_access').insert({
    issuer: idp.issuer('financing'),
    subject: merchant.financingSubject,
    merchant_id: id,
    permissions: ['financing.read', 'financing.write'],
  });
  return id;
}

/** Presigns an upload of `body` for the merchant; uploads it unless told not to. Answers the document id. */
export async function uploadDocument(
  body: Buffer,
  options: { contentType?: string; upload?: boolean; headers?: Record<string, string> } & Target = {},
): Promise<string> {
  const contentType = options.contentType ?? 'application/pdf';
  const presigned = await call('POST', presignPath(options.merchantId), {
    headers: options.headers ?? (await financingHeaders()),
    json: { document_type: 'INVOICE', content_type: contentType, size_bytes: body.length },
    baseUrl: options.baseUrl,
  });
  assert.equal(presigned.status, 201, presigned.text);
  if (options.upload !== false) await putDocument(presigned.body.url, body, contentType);
  return presigned.body.upload_ref as string;
}

/** Uploads `body` as a client that has only the URL does: `PUT url` with the Content-Type it declared. */
export async function putDocument(url: string, body: Buffer, contentType = 'application/pdf') {
  const put = await fetch(url, { method: 'PUT', headers: { 'content-type': contentType }, body });
  assert.equal(put.status, 200, await put.text());
}

export async function registerInvoice(
  documentId: string,
  headers?: Record<string, string>,
  target: Target = {},
): Promise<Reply> {
  return call('POST', invoicesPath(target.merchantId), {
    headers: headers ?? (await financingHeaders()),
    json: { document_id: documentId },
    baseUrl: target.baseUrl,
  });
}

export async function readInvoice(id: string, merchantId: string = merchant.id): Promise<Reply> {
  return call('GET', `${invoicesPath(merchantId)}/${id}`, { headers: await financingHeaders() });
}

/** The invoice once its extraction has ended (not PENDING). */
export async function settledInvoice(id: string, timeoutMs = 20_000, merchantId: string = merchant.id) {
  return until(
    `invoice ${id} settled`,
    async () => {
      const reply = await readInvoice(id, merchantId);
      assert.equal(reply.status, 200, reply.text);
      return reply.body.status === 'PENDING' ? undefined : reply.body;
    },
    timeoutMs,
    100,
  );
}

/** The extraction simulator's control API. */
export async function extractionControl<T = unknown>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const url = harness().config.EXTRACTION_URL;
  assert.ok(url, 'the extraction simulator runs');
  const response = await fetch(`${url}/_control${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status}`);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/** How many analyses the simulator ran of these bytes. */
export async function analysesOf(document: Buffer): Promise<number> {
  const sha256 = createHash('sha256').update(document).digest('hex');
  const analyses = await extractionControl<{ sha256?: string }[]>('/analyses');
  return analyses.filter((a) => a.sha256 === sha256).length;
}

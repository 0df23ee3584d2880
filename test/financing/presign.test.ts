import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import type { ApplicationFailure } from '@temporalio/common';
import { createFinancingActivities } from '../../activities/financing';
import { ExtractionFailure } from '../../workflows/financing/messages';
import { DEMO } from '../../db/seeds/demo';
import { createObjectStore } from '../../providers/storage';
import { harness } from '../support/harness';
import { analysesOf, invoicePdf, registerInvoice, settledInvoice } from '../support/financing';
import { call } from '../support/http';
import { backendToken, bearer, financingToken } from '../support/tokens';

const merchant = DEMO.merchant;
const presignPath = (merchantId: string) => `/v1/financing/merchants/${encodeURIComponent(merchantId)}/uploads/presign`;
const claims = { organization_id: merchant.organization_id, permissions: ['financing.write:ORG'] };
const headersFor = async (subject: string = merchant.financingSubject) =>
  bearer(await financingToken('financing', subject, claims));

describe('spec 4.5: POST /v1/financing/merchants/{merchantId}/uploads/presign', () => {
  it('answers {upload_ref, url, expires_at}; the document is recorded awaiting upload for the merchant and its organization; the exact upload is stored', async () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(2_000, 0x20)]);
    const reply = await call('POST', presignPath(merchant.id), {
      headers: await headersFor(),
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: pdf.length },
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    assert.deepEqual(Object.keys(reply.body).sort(), ['expires_at', 'upload_headers', 'upload_ref', 'url']);
    assert.deepEqual(reply.body.upload_headers, { 'Content-Type': 'application/pdf' }, 'only what the URL needs');
    const expires = Date.parse(reply.body.expires_at);
    assert.ok(expires > Date.now() && expires <= Date.now() + harness().config.UPLOAD_URL_TTL + 1_000);
    const row = await harness().db('financing_documents').where({ id: reply.body.upload_ref }).first();
    assert.deepEqual(
      [row.organization_id, row.merchant_id, row.status, row.content_type, Number(row.size_bytes), row.created_by],
      [
        merchant.organization_id,
        merchant.id,
        'AWAITING_UPLOAD',
        'application/pdf',
        pdf.length,
        merchant.financingSubject,
      ],
    );
    assert.ok(reply.body.url.includes(row.object_key), 'the URL names the key we chose');
    assert.equal(row.object_key, `uploads/${merchant.organization_id}/${row.object_key.split('/')[2]}/${row.id}`);
    assert.ok(!row.object_key.includes(merchant.id), 'the merchant id appears only as a digest');
    const wrongType = await fetch(reply.body.url, {
      method: 'PUT',
      headers: { 'content-type': 'image/png' },
      body: pdf,
    });
    assert.equal(wrongType.status, 403, 'the store refuses another content type');
    const wrongSize = await fetch(reply.body.url, {
      method: 'PUT',
      headers: reply.body.upload_headers,
      body: pdf.subarray(10),
    });
    assert.equal(wrongSize.status, 403, 'the store refuses another size');
    const put = await fetch(reply.body.url, {
      method: 'PUT',
      headers: reply.body.upload_headers,
      body: pdf,
    });
    assert.equal(put.status, 200);
    const stored = await createObjectStore(harness().config).head(row.object_key);
    assert.deepEqual([stored?.sizeBytes, stored?.contentType], [pdf.length, 'application/pdf']);
  });

  it('url (URI to upload to): a plain PUT of the document to url, with only the Content-Type asked for (and the Content-Length fetch sends), stores it; its invoice then registers and is extracted', async () => {
    const pdf = invoicePdf({ Total: 'KES 980.00' });
    const reply = await call('POST', presignPath(merchant.id), {
      headers: await headersFor(),
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: pdf.length },
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    // A client written from the spec alone: the URL, the content type it asked for, the body.
    const put = await fetch(reply.body.url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/pdf' },
      body: pdf,
    });
    assert.equal(put.status, 200, await put.text());
    const registered = await registerInvoice(reply.body.upload_ref);
    assert.equal(registered.status, 201, registered.text);
    const invoice = await settledInvoice(registered.body.id);
    assert.equal(invoice.status, 'EXTRACTED', JSON.stringify(invoice));
    assert.deepEqual([invoice.amount_minor_units, invoice.currency], [98_000, 'KES']);
  });

  it('a second PUT to url is accepted and harmless: before the document is kept it replaces the upload (checked when kept); once kept, the copy is what registration checks and the provider reads, and the upload is deleted', async () => {
    const store = createObjectStore(harness().config);
    const first = invoicePdf({ 'Invoice number': 'INV-00000001', Total: 'KES 1,250.50' });
    const second = invoicePdf({ 'Invoice number': 'INV-00000002', Total: 'KES 2,500.00' });
    assert.equal(first.length, second.length);
    const reply = await call('POST', presignPath(merchant.id), {
      headers: await headersFor(),
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: first.length },
    });
    const row = await harness().db('financing_documents').where({ id: reply.body.upload_ref }).first();
    const upload = (body: Buffer) =>
      fetch(reply.body.url, { method: 'PUT', headers: { 'Content-Type': 'application/pdf' }, body });
    assert.equal((await upload(first)).status, 200);
    assert.equal((await upload(second)).status, 200, 'the merchant may replace its upload before registering it');

    const registered = await registerInvoice(reply.body.upload_ref);
    assert.equal(registered.status, 201, registered.text);
    const extracted = await settledInvoice(registered.body.id);
    assert.deepEqual([extracted.status, extracted.amount_minor_units], ['EXTRACTED', 250_000], 'the upload kept');
    assert.deepEqual([await analysesOf(first), await analysesOf(second)], [0, 1]);
    const kept = `documents/${row.object_key.slice('uploads/'.length)}`;
    const copy = await fetch((await store.presignGet({ key: kept, expiresInSeconds: 60 })).url);
    assert.ok(Buffer.from(await copy.arrayBuffer()).equals(second), 'our copy holds the bytes checked');
    assert.equal(await store.head(row.object_key), undefined, 'the upload is deleted once kept');

    // Still within the URL's validity: the store takes another PUT, of the same type and size, that is not a PDF.
    const html = Buffer.concat([Buffer.from('<!doctype html><script>'), Buffer.alloc(first.length - 23, 0x20)]);
    assert.equal(html.length, first.length);
    assert.equal((await upload(html)).status, 200);
    const again = await registerInvoice(reply.body.upload_ref);
    assert.equal(again.status, 200, `the kept copy is checked, not the new upload: ${again.text}`);
    const reextracted = await settledInvoice(registered.body.id);
    assert.deepEqual([reextracted.status, reextracted.amount_minor_units], ['EXTRACTED', 250_000]);
    assert.deepEqual([await analysesOf(second), await analysesOf(html)], [2, 0], 'the provider read our copy again');
  });

  it('a document, once uploaded, never changes: its kept copy’s SHA-256 is recorded when kept, and a copy changed in the store afterwards is never analysed (the extraction FAILED, DOCUMENT_CHANGED), neither by its store step nor by its analysis step', async function () {
    this.timeout(60_000);
    const { db, config, deps } = harness();
    const store = createObjectStore(config);
    const first = invoicePdf({ 'Invoice number': 'INV-00000011', Total: 'KES 1,250.50' });
    const forged = invoicePdf({ 'Invoice number': 'INV-00000011', Total: 'KES 9,999.99' });
    assert.equal(first.length, forged.length);
    const reply = await call('POST', presignPath(merchant.id), {
      headers: await headersFor(),
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: first.length },
    });
    const documentId = reply.body.upload_ref as string;
    await fetch(reply.body.url, { method: 'PUT', headers: { 'Content-Type': 'application/pdf' }, body: first });
    const registered = await registerInvoice(documentId);
    assert.equal(registered.status, 201, registered.text);
    assert.equal((await settledInvoice(registered.body.id)).status, 'EXTRACTED');
    const row = await db('financing_documents').where({ id: documentId }).first();
    assert.equal(row.sha256, createHash('sha256').update(first).digest('hex'), 'the digest of what was kept');

    // Someone holding the store's own credentials replaces the kept copy (no URL can).
    const kept = `documents/${row.object_key.slice('uploads/'.length)}`;
    await store.remove(kept);
    assert.equal(await store.storeOnce({ key: kept, body: forged, contentType: 'application/pdf' }), true);
    const again = await registerInvoice(documentId);
    assert.equal(again.status, 200, again.text);
    const failed = await settledInvoice(registered.body.id);
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.failure_reason, /SHA-256 differs/);
    assert.equal(await analysesOf(forged), 0, 'the changed copy never reached the provider');
    const recorded = await db('financing_documents').where({ id: documentId }).first('sha256');
    assert.equal(recorded.sha256, row.sha256, 'the first digest stays the one recorded');

    // The analysis step checks it too, right before the provider is handed the copy.
    const activities = createFinancingActivities(deps);
    await assert.rejects(
      activities.analyzeInvoice({
        objectKey: row.object_key,
        document: { organizationId: row.organization_id, documentId, sizeBytes: first.length },
      }),
      (error: ApplicationFailure) => error.type === ExtractionFailure.DOCUMENT_CHANGED,
    );
    assert.equal(await analysesOf(forged), 0);
  });

  it('each validation failure is 400 INVALID_PARAMS in the validation shape, naming the field; nothing is recorded', async () => {
    const headers = await headersFor();
    const before = Number((await harness().db('financing_documents').count({ n: '*' }))[0]!.n);
    const ok = { document_type: 'INVOICE', content_type: 'image/jpeg', size_bytes: 1_000 };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...ok, document_type: 'RECEIPT' }, 'body.document_type'],
      [{ ...ok, content_type: 'text/plain' }, 'body.content_type'],
      [{ ...ok, content_type: 'image/gif' }, 'body.content_type'],
      [{ ...ok, size_bytes: 0 }, 'body.size_bytes'],
      [{ ...ok, size_bytes: -5 }, 'body.size_bytes'],
      [{ ...ok, size_bytes: 10.5 }, 'body.size_bytes'],
      [{ ...ok, size_bytes: '1000' }, 'body.size_bytes'],
      [{ ...ok, size_bytes: harness().config.UPLOAD_MAX_BYTES + 1 }, 'body.size_bytes'],
      [{ content_type: 'image/jpeg', size_bytes: 1_000 }, 'body.document_type'],
      [{ ...ok, key: 'documents/elsewhere' }, 'body'],
    ];
    for (const [body, path] of cases) {
      const reply = await call('POST', presignPath(merchant.id), { headers, json: body });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.body.code, 'INVALID_PARAMS');
      assert.ok(reply.body.identifier, 'the validation shape');
      assert.ok(
        reply.body.invalid_params.some((p: { path: string }) => p.path.startsWith(path)),
        `${JSON.stringify(body)}: ${JSON.stringify(reply.body.invalid_params)}`,
      );
    }
    const longId = await call('POST', presignPath('m'.repeat(256)), { headers, json: ok });
    assert.equal(longId.status, 400);
    assert.equal(longId.body.code, 'INVALID_PARAMS');
    const after = Number((await harness().db('financing_documents').count({ n: '*' }))[0]!.n);
    assert.equal(after, before);
  });

  it('a token without the merchant-scoped permission is 403; a token of an untrusted issuer (a backend token) is 401', async () => {
    const ok = { document_type: 'INVOICE', content_type: 'image/png', size_bytes: 10 };
    const stranger = await call('POST', presignPath(merchant.id), {
      headers: await headersFor('fin|stranger'),
      json: ok,
    });
    assert.equal(stranger.status, 403);
    assert.equal(stranger.body.code, 'FORBIDDEN');
    const otherMerchant = await call('POST', presignPath('mrc-someone-else'), {
      headers: await headersFor(),
      json: ok,
    });
    assert.equal(otherMerchant.status, 403);
    const backend = await call('POST', presignPath(merchant.id), {
      headers: bearer(await backendToken(DEMO.users.customer.id)),
      json: ok,
    });
    assert.equal(backend.status, 401);
    assert.equal(backend.body.code, 'UNAUTHORISED');
  });
});

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { DEMO } from '../../db/seeds/demo';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import {
  analysesOf,
  extractionControl,
  financingHeaders,
  invoicePdf,
  invoicesPath,
  merchant,
  putDocument,
  readInvoice,
  registerInvoice,
  settledInvoice,
  uploadDocument,
} from '../support/financing';
import { backendToken, bearer, financingToken } from '../support/tokens';

const invoiceRow = (id: string) => harness().db('financing_invoices').where({ id }).first();
const documentRow = (id: string) => harness().db('financing_documents').where({ id }).first();

describe('spec 4.5: POST /v1/financing/merchants/{merchantId}/invoices (registration and re-extraction)', () => {
  afterEach(() => extractionControl('/reset', 'POST'));

  it('registration: the first POST on an uploaded document registers the invoice PENDING (201) and its extraction records amount, currency, dates and details', async () => {
    const pdf = invoicePdf({ 'Invoice number': 'INV-2026-0042', Total: 'KES 1,250.50' });
    const documentId = await uploadDocument(pdf);
    const registered = await registerInvoice(documentId);
    assert.equal(registered.status, 201, registered.text);
    assert.equal(registered.body.status, 'PENDING');
    assert.equal(registered.body.document_id, documentId);
    assert.equal(registered.body.amount_minor_units, null, 'nothing extracted yet');
    assert.equal(registered.headers.get('location'), `${invoicesPath()}/${registered.body.id}`);

    const invoice = await settledInvoice(registered.body.id);
    await recordHistory(workflowIds.invoiceExtraction(documentId), 'invoiceExtraction-extracted');
    assert.deepEqual(
      {
        status: invoice.status,
        amount_minor_units: invoice.amount_minor_units,
        currency: invoice.currency,
        issued_date: invoice.issued_date,
        due_date: invoice.due_date,
      },
      {
        status: 'EXTRACTED',
        amount_minor_units: 125_050,
        currency: 'KES',
        issued_date: '2026-11-01',
        due_date: '2026-12-01',
      },
    );
    assert.equal(invoice.details.invoice_id, 'INV-2026-0042');
    assert.equal(invoice.details.vendor_name, 'Kariakoo Traders');
    assert.equal(invoice.id, registered.body.id);
    assert.equal(invoice.created_at, registered.body.created_at);
    const document = await documentRow(documentId);
    assert.equal(document.status, 'UPLOADED');
    assert.ok(document.uploaded_at);
    assert.equal(await analysesOf(pdf), 1);
  });

  it('a document registered before its upload is waited for, then extracted', async () => {
    const pdf = invoicePdf({ Total: 'UGX 150,000' });
    const presigned = await call('POST', `/v1/financing/merchants/${merchant.id}/uploads/presign`, {
      headers: await financingHeaders(),
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: pdf.length },
    });
    const registered = await registerInvoice(presigned.body.upload_ref);
    assert.equal(registered.status, 201);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal((await readInvoice(registered.body.id)).body.status, 'PENDING', 'still waiting for the document');
    await putDocument(presigned.body.url, pdf);
    const invoice = await settledInvoice(registered.body.id);
    assert.equal(invoice.status, 'EXTRACTED');
    assert.deepEqual([invoice.amount_minor_units, invoice.currency], [150_000, 'UGX'], 'UGX has no minor unit');
  });

  it('a POST while an extraction runs answers the invoice as it is (200, PENDING) and begins nothing new', async () => {
    const pdf = invoicePdf({ SIMULATE: 'slow' });
    const documentId = await uploadDocument(pdf);
    const registered = await registerInvoice(documentId);
    assert.equal(registered.status, 201);
    for (let i = 0; i < 3; i += 1) {
      const again = await registerInvoice(documentId);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual([again.body.id, again.body.status], [registered.body.id, 'PENDING']);
    }
    const invoice = await settledInvoice(registered.body.id);
    assert.equal(invoice.status, 'EXTRACTED');
    assert.equal((await invoiceRow(invoice.id)).extraction, 1, 'one extraction asked for');
    assert.equal(await analysesOf(pdf), 1, 'the provider analysed the document once');
  });

  it('re-extraction: a POST after an ended extraction makes the same invoice PENDING again, its fields cleared, and extracts anew in a new run', async () => {
    const pdf = invoicePdf();
    const documentId = await uploadDocument(pdf);
    const registered = await registerInvoice(documentId);
    const first = await settledInvoice(registered.body.id);
    assert.equal(first.status, 'EXTRACTED');
    const firstRun = (await harness().client.workflow.getHandle(workflowIds.invoiceExtraction(documentId)).describe())
      .runId;

    const again = await registerInvoice(documentId);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, registered.body.id, 'the invoice keeps its id');
    assert.equal(again.body.status, 'PENDING');
    assert.equal(again.body.amount_minor_units, null, 'its fields cleared while it runs');
    const second = await settledInvoice(registered.body.id);
    assert.equal(second.status, 'EXTRACTED');
    assert.equal(second.amount_minor_units, first.amount_minor_units);
    assert.equal((await invoiceRow(second.id)).extraction, 2);
    assert.equal(await analysesOf(pdf), 2);
    const secondRun = (await harness().client.workflow.getHandle(workflowIds.invoiceExtraction(documentId)).describe())
      .runId;
    assert.notEqual(secondRun, firstRun, 'a new extraction run');
    const invoices = await harness().db('financing_invoices').where({ document_id: documentId });
    assert.equal(invoices.length, 1, 'one invoice per document');
  });

  it('extraction failure and retry: an unreadable document ends FAILED with the provider’s reason; re-extracting it succeeds', async () => {
    const pdf = invoicePdf({ SIMULATE: 'unreadable-once' });
    const documentId = await uploadDocument(pdf);
    const registered = await registerInvoice(documentId);
    const failed = await settledInvoice(registered.body.id);
    await recordHistory(workflowIds.invoiceExtraction(documentId), 'invoiceExtraction-failed');
    assert.equal(failed.status, 'FAILED');
    assert.ok(failed.failure_reason, 'says why');
    assert.equal(failed.amount_minor_units, null);

    const retried = await registerInvoice(documentId);
    assert.equal(retried.status, 200);
    const invoice = await settledInvoice(registered.body.id);
    assert.equal(invoice.status, 'EXTRACTED');
    assert.equal(invoice.failure_reason, null);
    assert.equal(invoice.amount_minor_units, 125_050);
  });

  it('an unavailable provider is retried until EXTRACTION_DEADLINE, then the invoice is FAILED; an outage shorter than that is ridden out', async () => {
    await extractionControl('/mode', 'PATCH', { analyze: 'error' });
    const down = await registerInvoice(await uploadDocument(invoicePdf()));
    const failed = await settledInvoice(down.body.id, 30_000);
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.failure_reason, /unavailable/);

    const brief = await registerInvoice(await uploadDocument(invoicePdf()));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await extractionControl('/mode', 'PATCH', { analyze: 'normal' });
    const invoice = await settledInvoice(brief.body.id, 30_000);
    assert.equal(invoice.status, 'EXTRACTED');
  });

  it('what the provider reads but cannot use ends FAILED: no due date, a due date before the issue date, an amount finer than the currency', async () => {
    const cases = [
      invoicePdf({ 'Due date': undefined }),
      invoicePdf({ 'Invoice date': '2026-12-02', 'Due date': '2026-12-01' }),
      invoicePdf({ Total: 'KES 10.505' }),
    ];
    const registered = await Promise.all(cases.map(async (pdf) => registerInvoice(await uploadDocument(pdf))));
    for (const reply of registered) {
      const invoice = await settledInvoice(reply.body.id);
      assert.equal(invoice.status, 'FAILED', JSON.stringify(invoice));
      assert.ok(invoice.failure_reason);
      assert.deepEqual([invoice.amount_minor_units, invoice.due_date], [null, null]);
    }
  });

  it('an invoice left PENDING without a run (a crash between the statement and the start) is extracted once the next POST comes', async () => {
    const documentId = await uploadDocument(invoicePdf());
    const id = randomUUID();
    const now = new Date();
    await harness().db('financing_invoices').insert({
      id,
      organization_id: merchant.organization_id,
      merchant_id: merchant.id,
      document_id: documentId,
      status: 'PENDING',
      extraction: 1,
      created_by: merchant.financingSubject,
      created_at: now,
      updated_at: now,
    });
    const again = await registerInvoice(documentId);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual([again.body.id, again.body.status], [id, 'PENDING']);
    const invoice = await settledInvoice(id);
    assert.equal(invoice.status, 'EXTRACTED');
    assert.equal((await invoiceRow(id)).extraction, 1, 'the extraction asked for, not another');
  });

  it('a document never uploaded ends NOT_UPLOADED once its upload URL expired and DOCUMENT_UPLOAD_GRACE passed; the document is NEVER_UPLOADED', async () => {
    const documentId = await uploadDocument(invoicePdf(), { upload: false });
    // The URL's lifetime is UPLOAD_URL_TTL; this one has just run out.
    await harness().db('financing_documents').where({ id: documentId }).update({ upload_expires_at: new Date() });
    const registered = await registerInvoice(documentId);
    assert.equal(registered.status, 201);
    const invoice = await settledInvoice(registered.body.id);
    await recordHistory(workflowIds.invoiceExtraction(documentId), 'invoiceExtraction-not-uploaded');
    assert.equal(invoice.status, 'NOT_UPLOADED');
    assert.equal((await documentRow(documentId)).status, 'NEVER_UPLOADED');
    assert.equal(await extractionControl<unknown[]>('/analyses').then((a) => a.length), 0, 'nothing analysed');
  });

  it('another merchant’s document and another organization’s are not found (404, validation shape); nothing is registered', async () => {
    const { db } = harness();
    const other = `mrc-${randomUUID().slice(0, 8)}`;
    const foreign = `mrc-${randomUUID().slice(0, 8)}`;
    await db('merchants').insert([
      { id: other, organization_id: merchant.organization_id, name: 'Another merchant' },
      { id: foreign, organization_id: DEMO.organizations.second.id, name: 'Another lender’s merchant' },
    ]);
    // The same subject may act for the other merchant too: the refusal is about the document, not access.
    await db('merchant_access').insert({
      issuer: harness().idp.issuer('financing'),
      subject: merchant.financingSubject,
      merchant_id: other,
      permissions: ['financing.read', 'financing.write'],
    });
    const documentOf = async (merchantId: string, organizationId: string) => {
      const id = randomUUID();
      await db('financing_documents').insert({
        id,
        organization_id: organizationId,
        merchant_id: merchantId,
        document_type: 'INVOICE',
        content_type: 'application/pdf',
        size_bytes: 100,
        object_key: `documents/${organizationId}/x/${id}`,
        created_by: 'fin|someone',
        upload_expires_at: new Date(Date.now() + 60_000),
      });
      return id;
    };
    const othersDocument = await documentOf(other, merchant.organization_id);
    const foreignDocument = await documentOf(foreign, DEMO.organizations.second.id);
    for (const documentId of [othersDocument, foreignDocument, randomUUID()]) {
      const reply = await registerInvoice(documentId);
      assert.equal(reply.status, 404, reply.text);
      assert.equal(reply.body.code, 'NOT_FOUND');
      assert.ok(reply.body.identifier, 'the validation shape');
      assert.ok(Array.isArray(reply.body.invalid_params));
    }
    const count = await db('financing_invoices').whereIn('document_id', [othersDocument, foreignDocument]).count();
    assert.equal(Number(count[0]!.count), 0);

    // And an invoice read through another merchant's path is not found either.
    const mine = await registerInvoice(await uploadDocument(invoicePdf()));
    const elsewhere = await call('GET', `${invoicesPath(other)}/${mine.body.id}`, {
      headers: await financingHeaders(),
    });
    assert.equal(elsewhere.status, 404);
    const theirs = await call('POST', invoicesPath(other), {
      headers: await financingHeaders(),
      json: { document_id: mine.body.document_id },
    });
    assert.equal(theirs.status, 404, 'my document under the other merchant’s path');
    await settledInvoice(mine.body.id);
  });

  it('each validation failure is 400 INVALID_PARAMS naming the field; a token without the merchant-scoped permission is 403; an untrusted issuer’s token is 401', async () => {
    const headers = await financingHeaders();
    for (const [body, path] of [
      [{}, 'body.document_id'],
      [{ document_id: 'not-a-uuid' }, 'body.document_id'],
      [{ document_id: 42 }, 'body.document_id'],
      [{ document_id: randomUUID(), extra: true }, 'body'],
    ] as const) {
      const reply = await call('POST', invoicesPath(), { headers, json: body });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.body.code, 'INVALID_PARAMS');
      assert.ok(reply.body.invalid_params.some((p: { path: string }) => p.path.startsWith(path)));
    }
    const longId = await call('POST', invoicesPath('m'.repeat(256)), { headers, json: { document_id: randomUUID() } });
    assert.equal(longId.status, 400);
    const badId = await call('GET', `${invoicesPath()}/not-a-uuid`, { headers });
    assert.equal(badId.status, 400);
    assert.equal(badId.body.code, 'INVALID_PARAMS');

    const documentId = await uploadDocument(invoicePdf());
    const stranger = await registerInvoice(documentId, await financingHeaders('fin|stranger'));
    assert.equal(stranger.status, 403);
    assert.equal(stranger.body.code, 'FORBIDDEN');
    const backend = await registerInvoice(documentId, bearer(await backendToken(DEMO.users.customer.id)));
    assert.equal(backend.status, 401);
    assert.equal(backend.body.code, 'UNAUTHORISED');

    // financing.read alone reads invoices but does not register them.
    await harness()
      .db('merchant_access')
      .insert({
        issuer: harness().idp.issuer('financing'),
        subject: 'fin|kariakoo-reader',
        merchant_id: merchant.id,
        permissions: ['financing.read'],
      })
      .onConflict(['issuer', 'subject', 'merchant_id'])
      .merge();
    const reader = bearer(
      await financingToken('financing', 'fin|kariakoo-reader', { organization_id: merchant.organization_id }),
    );
    const refused = await registerInvoice(documentId, reader);
    assert.equal(refused.status, 403);
    const registered = await registerInvoice(documentId);
    const read = await call('GET', `${invoicesPath()}/${registered.body.id}`, { headers: reader });
    assert.equal(read.status, 200, read.text);
    const unauthenticated = await call('GET', `${invoicesPath()}/${registered.body.id}`);
    assert.equal(unauthenticated.status, 401);
    await settledInvoice(registered.body.id);
    assert.equal((await invoiceRow(registered.body.id)).created_by, merchant.financingSubject);
  });

  it('the OpenAPI document lists the financing operations’ error responses in the validation shape: six for presign, seven for registration', async () => {
    const reply = await call('GET', '/openapi.json');
    const operation = (path: string) => reply.body.paths[path].post;
    const errorStatuses = (op: { responses: Record<string, unknown> }) =>
      Object.keys(op.responses).filter((status) => Number(status) >= 400);
    const presign = operation('/v1/financing/merchants/{merchantId}/uploads/presign');
    const register = operation('/v1/financing/merchants/{merchantId}/invoices');
    for (const status of ['400', '401', '403', '429', '500', '503'])
      assert.ok(errorStatuses(presign).includes(status), `presign ${status}`);
    for (const status of ['400', '401', '403', '404', '429', '500', '503'])
      assert.ok(errorStatuses(register).includes(status), `register ${status}`);
    for (const op of [presign, register])
      for (const status of errorStatuses(op))
        assert.equal(
          op.responses[status].content['application/json'].schema.$ref,
          '#/components/schemas/ValidationError',
          `${op.operationId} ${status}`,
        );
  });
});

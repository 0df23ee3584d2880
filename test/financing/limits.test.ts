import { strict as assert } from 'node:assert';
import { buildApp } from '../../api/app';
import { type RunningApi, startApi } from '../../api/server';
import type { Config } from '../../config';
import { harness } from '../support/harness';
import { call, type Reply } from '../support/http';
import {
  analysesOf,
  extractionControl,
  financingHeaders,
  invoicePdf,
  newMerchant,
  presignPath,
  putDocument,
  registerInvoice,
  settledInvoice,
  uploadDocument,
} from '../support/financing';
import { testRoutes } from '../support/test-routes';

/**
 * A second API instance over the harness's parts (the same Postgres, Temporal and worker), with
 * some settings changed and a clock the test moves forward (the limits' windows are read from it).
 */
async function apiWith(changes: Partial<Config>): Promise<{ url: string; advance(ms: number): void }> {
  const { deps } = harness();
  let offsetMs = 0;
  const clock = { now: () => new Date(Date.now() + offsetMs) };
  const api = await startApi(
    buildApp({ ...deps, clock, config: { ...deps.config, ...changes } }, { extraRoutes: testRoutes() }),
    '127.0.0.1',
    0,
  );
  running.push(api);
  return { url: api.url, advance: (ms) => void (offsetMs += ms) };
}
const running: RunningApi[] = [];

/** A 429 in the validation shape with a Retry-After of at most `maxSeconds`; answers the seconds. */
function assertTooMany(reply: Reply, maxSeconds: number): number {
  assert.equal(reply.status, 429, reply.text);
  assert.equal(reply.body.code, 'TOO_MANY_REQUESTS');
  assert.ok(reply.body.identifier, 'the validation shape');
  assert.deepEqual(reply.body.invalid_params, []);
  const seconds = Number(reply.headers.get('retry-after'));
  assert.ok(Number.isInteger(seconds) && seconds >= 1 && seconds <= maxSeconds, `Retry-After ${seconds}`);
  return seconds;
}

const presign = (baseUrl: string, merchantId: string, sizeBytes: number) =>
  financingHeaders().then((headers) =>
    call('POST', presignPath(merchantId), {
      headers,
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: sizeBytes },
      baseUrl,
    }),
  );
const statuses = (replies: Reply[]) => replies.map((r) => r.status).sort();
const documentsOf = async (merchantId: string) =>
  Number((await harness().db('financing_documents').where({ merchant_id: merchantId }).count({ n: '*' }))[0]!.n);

describe('attack run: the financing routes bound what one merchant token can make the service spend', () => {
  afterEach(() => extractionControl('/reset', 'POST'));
  after(async () => {
    await Promise.all(running.splice(0).map((api) => api.close()));
  });

  it('re-extraction limit: beyond EXTRACTION_LIMIT extractions of one document in EXTRACTION_LIMIT_WINDOW, a POST is 429 with Retry-After (concurrent POSTs included) and nothing reaches the provider; once the window has moved on, it re-extracts', async () => {
    const window = 3_600_000;
    const api = await apiWith({ EXTRACTION_LIMIT: 2, EXTRACTION_LIMIT_WINDOW: window });
    const merchantId = await newMerchant();
    const target = { merchantId, baseUrl: api.url };
    const pdf = invoicePdf();
    const documentId = await uploadDocument(pdf, target);

    const registered = await registerInvoice(documentId, undefined, target);
    assert.equal(registered.status, 201, registered.text);
    await settledInvoice(registered.body.id, undefined, merchantId);
    const again = await registerInvoice(documentId, undefined, target);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.status, 'PENDING');
    const extracted = await settledInvoice(registered.body.id, undefined, merchantId);
    assert.equal(extracted.status, 'EXTRACTED');
    assert.equal(await analysesOf(pdf), 2);

    const refused = await Promise.all(
      Array.from({ length: 8 }, async () => registerInvoice(documentId, undefined, target)),
    );
    const waits = refused.map((reply) => assertTooMany(reply, window / 1000));
    const row = await harness().db('financing_invoices').where({ id: registered.body.id }).first();
    assert.deepEqual([row.status, row.extraction], ['EXTRACTED', 2], 'nothing begun, the result kept');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(await analysesOf(pdf), 2, 'the provider was not asked again');

    // The extractions counted leave the window: one (and only one) of concurrent POSTs begins the next.
    assert.ok(Math.min(...waits) > window / 1000 - 60, `Retry-After: when the first leaves the window (${waits})`);
    api.advance(window + 1_000);
    const admitted = await Promise.all(
      Array.from({ length: 6 }, async () => registerInvoice(documentId, undefined, target)),
    );
    assert.deepEqual(statuses(admitted), Array(6).fill(200), admitted.map((r) => r.text).join('\n'));
    assert.ok(admitted.every((reply) => reply.body.status === 'PENDING'));
    assert.equal((await settledInvoice(registered.body.id, undefined, merchantId)).status, 'EXTRACTED');
    const extraction = async () =>
      (await harness().db('financing_invoices').where({ id: registered.body.id }).first()).extraction;
    assert.equal(await extraction(), 3);
    assert.equal((await registerInvoice(documentId, undefined, target)).status, 200);
    await settledInvoice(registered.body.id, undefined, merchantId);
    assertTooMany(await registerInvoice(documentId, undefined, target), window / 1000);
    assert.equal(await extraction(), 4);
    assert.equal(await analysesOf(pdf), 4);

    // The limit is per document: another document of the merchant is registered as usual.
    const other = await registerInvoice(await uploadDocument(invoicePdf(), target), undefined, target);
    assert.equal(other.status, 201, other.text);
    await settledInvoice(other.body.id, undefined, merchantId);
  });

  it('presign quota, pending uploads: beyond UPLOAD_QUOTA_PENDING presigned uploads of a merchant not yet registered and still valid, a presign is 429 with Retry-After (concurrent presigns included) and nothing is recorded; registering one frees its place, and an expired URL is not pending', async () => {
    const api = await apiWith({ UPLOAD_QUOTA_PENDING: 4 });
    const merchantId = await newMerchant();
    const replies = await Promise.all(Array.from({ length: 12 }, () => presign(api.url, merchantId, 1_000)));
    assert.deepEqual(statuses(replies), [...Array(4).fill(201), ...Array(8).fill(429)]);
    for (const reply of replies.filter((r) => r.status === 429))
      assertTooMany(reply, Math.ceil(harness().config.UPLOAD_URL_TTL / 1000));
    assert.equal(await documentsOf(merchantId), 4, 'a refused presign records nothing');

    // Registering one of them (it need not be uploaded yet) frees its place.
    const first = replies.find((r) => r.status === 201)!;
    const registered = await registerInvoice(first.body.upload_ref, undefined, { merchantId, baseUrl: api.url });
    assert.equal(registered.status, 201, registered.text);
    assert.equal((await presign(api.url, merchantId, 1_000)).status, 201);
    assertTooMany(await presign(api.url, merchantId, 1_000), Math.ceil(harness().config.UPLOAD_URL_TTL / 1000));
    await putDocument(first.body.url, Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(991, 0x20)]));
    await settledInvoice(registered.body.id, undefined, merchantId);

    // Once their URLs have expired, unused uploads are no longer pending.
    api.advance(harness().config.UPLOAD_URL_TTL + 1_000);
    assert.equal((await presign(api.url, merchantId, 1_000)).status, 201);
    // Another merchant has its own quota.
    assert.equal((await presign(api.url, await newMerchant(), 1_000)).status, 201);
  });

  it('presign quota, bytes: beyond UPLOAD_QUOTA_BYTES presigned by a merchant in UPLOAD_QUOTA_WINDOW, a presign is 429 with Retry-After (concurrent presigns included) and nothing is recorded; once the window has moved on, it is presigned', async () => {
    const window = 86_400_000;
    const api = await apiWith({ UPLOAD_QUOTA_BYTES: 10_000, UPLOAD_QUOTA_WINDOW: window });
    const merchantId = await newMerchant();
    const replies = await Promise.all(Array.from({ length: 10 }, () => presign(api.url, merchantId, 3_000)));
    assert.deepEqual(statuses(replies), [...Array(3).fill(201), ...Array(7).fill(429)]);
    const waits = replies.filter((r) => r.status === 429).map((reply) => assertTooMany(reply, window / 1000));
    assert.equal(await documentsOf(merchantId), 3);
    assert.equal((await presign(api.url, merchantId, 1_000)).status, 201, 'exactly the quota is allowed');
    assertTooMany(await presign(api.url, merchantId, 1), window / 1000);
    assert.equal(await documentsOf(merchantId), 4);

    api.advance(Math.max(...waits) * 1000);
    assert.equal((await presign(api.url, merchantId, 3_000)).status, 201);
  });

  it("presign quota from running totals: each document carries its merchant's count and bytes presigned so far; a presign stamped before the last one (an instance whose clock is behind) is recorded at the last one's time, so the totals stay in time order and the window still moves on", async () => {
    const quota = { UPLOAD_QUOTA_BYTES: 10_000, UPLOAD_QUOTA_WINDOW: 60_000 };
    const [ahead, behind] = [await apiWith(quota), await apiWith(quota)];
    ahead.advance(5_000);
    const merchantId = await newMerchant();
    assert.equal((await presign(ahead.url, merchantId, 3_000)).status, 201);
    assert.equal((await presign(behind.url, merchantId, 4_000)).status, 201);
    const rows = await harness()
      .db('financing_documents')
      .where({ merchant_id: merchantId })
      .orderBy('presigned_count')
      .select('presigned_count', 'presigned_bytes', 'created_at');
    assert.deepEqual(
      rows.map((r) => [Number(r.presigned_count), Number(r.presigned_bytes)]),
      [
        [1, 3_000],
        [2, 7_000],
      ],
    );
    assert.equal(rows[1].created_at.getTime(), rows[0].created_at.getTime(), 'not earlier than the last');
    assertTooMany(await presign(behind.url, merchantId, 3_001), 66);
    // 60 s on the behind clock: the second document, recorded 5 s later than stamped, is still in the window.
    behind.advance(60_000);
    assertTooMany(await presign(behind.url, merchantId, 6_001), 66);
    behind.advance(6_000);
    assert.equal((await presign(behind.url, merchantId, 10_000)).status, 201);
  });

  it('stored content check: registering a document whose bytes are not its declared content type (HTML declared image/png or application/pdf), or whose stored size is not the presigned one, is 400 INVALID_PARAMS naming body.document_id, and nothing is registered or analysed; one uploaded after its registration ends FAILED unanalysed', async () => {
    const merchantId = await newMerchant();
    const target = { merchantId };
    const html = Buffer.from('<!doctype html><html><body><script>alert(1)</script></body></html>');
    const htmlAsPng = await uploadDocument(html, { ...target, contentType: 'image/png' });
    const htmlAsPdf = await uploadDocument(html, { ...target, contentType: 'application/pdf' });
    const resized = await uploadDocument(invoicePdf(), target);
    // A stored object of another size than presigned (impossible through our URL: as a store that did not check would hold).
    await harness().db('financing_documents').where({ id: resized }).decrement('size_bytes', 1);
    for (const [documentId, reason] of [
      [htmlAsPng, /PNG/],
      [htmlAsPdf, /PDF/],
      [resized, /size/],
    ] as const) {
      const reply = await registerInvoice(documentId, undefined, target);
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.body.code, 'INVALID_PARAMS');
      assert.ok(reply.body.identifier, 'the validation shape');
      assert.equal(reply.body.invalid_params.length, 1, reply.text);
      assert.equal(reply.body.invalid_params[0].path, 'body.document_id');
      assert.match(reply.body.invalid_params[0].reason, reason);
    }
    const invoices = await harness()
      .db('financing_invoices')
      .whereIn('document_id', [htmlAsPng, htmlAsPdf, resized])
      .count({ n: '*' });
    assert.equal(Number(invoices[0]!.n), 0, 'nothing registered');

    // What the presign accepts, with its real signature, is registered.
    const png = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(200)]);
    const jpeg = Buffer.concat([Buffer.from('ffd8ffe000104a464946', 'hex'), Buffer.alloc(200)]);
    for (const [body, contentType] of [
      [png, 'image/png'],
      [jpeg, 'image/jpeg'],
      [invoicePdf(), 'application/pdf'],
    ] as const) {
      const reply = await registerInvoice(await uploadDocument(body, { ...target, contentType }), undefined, target);
      assert.equal(reply.status, 201, `${contentType}: ${reply.text}`);
      await settledInvoice(reply.body.id, undefined, merchantId);
    }

    // Registered before its upload, the document is checked when it arrives: FAILED, never analysed.
    const presigned = await call('POST', presignPath(merchantId), {
      headers: await financingHeaders(),
      json: { document_type: 'INVOICE', content_type: 'image/jpeg', size_bytes: html.length },
    });
    const early = await registerInvoice(presigned.body.upload_ref, undefined, target);
    assert.equal(early.status, 201, early.text);
    await putDocument(presigned.body.url, html, 'image/jpeg');
    const failed = await settledInvoice(early.body.id, undefined, merchantId);
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.failure_reason, /JPEG/);
    assert.equal(await analysesOf(html), 0, 'HTML never reached the provider');
  });

  it('the OpenAPI document describes the limits: 429 for the re-extraction limit and the presign quota, 400 for content that is not its declared type', async () => {
    const reply = await call('GET', '/openapi.json');
    const operation = (path: string) => reply.body.paths[path].post;
    const presignOp = operation('/v1/financing/merchants/{merchantId}/uploads/presign');
    const register = operation('/v1/financing/merchants/{merchantId}/invoices');
    assert.match(presignOp.responses['429'].description, /UPLOAD_QUOTA_PENDING/);
    assert.match(presignOp.responses['429'].description, /UPLOAD_QUOTA_BYTES/);
    assert.match(register.responses['429'].description, /EXTRACTION_LIMIT/);
    assert.match(register.responses['400'].description, /content type/);
  });
});

import { strict as assert } from 'node:assert';
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createExtractionClient } from '../../providers/extraction/client';
import {
  type AnalysisOutcome,
  ExtractionError,
  type InvoiceExtractionClient,
  toMinorUnits,
} from '../../providers/extraction/protocol';
import {
  type RunningExtractionSimulator,
  type SimulatedAnalysis,
  startExtractionSimulator,
} from '../../simulators/extraction';

const API_KEY = 'dev-extraction-key-0123456789abcdef';
/** The presigned URLs' signature: a bearer credential that must reach no error and no listing. */
const SIGNATURE = '5d2a9f0c41e7b3a8c6d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const API = '/documentintelligence/documentModels';
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0]);

const FIELDS = {
  'Invoice number': 'INV-0042',
  Vendor: 'Kariakoo Traders',
  Customer: 'Nairobi Wholesale Ltd',
  Total: 'KES 1,250.50',
  'Amount due': 'KES 1,000.25',
  'Invoice date': '2026-11-01',
  'Due date': '2026-12-01',
};

/** Invoice text the simulator's OCR reads: `lines` replace or add to (undefined: remove) the defaults. */
const invoiceText = (lines: Record<string, string | undefined> = {}) =>
  Object.entries({ ...FIELDS, ...lines })
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
/** A unique line keeps every document's bytes (and sha256) apart. */
const invoicePdf = (lines: Record<string, string | undefined> = {}) =>
  Buffer.from(`%PDF-1.7\n% ${randomUUID()}\n${invoiceText(lines)}\n%%EOF\n`, 'latin1');

/** A plain HTTP server answering every request with `answer` (for answers the simulator never gives). */
async function stub(answer: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, Buffer.concat(chunks).toString(), res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** What the document server holds at a path. */
interface Served {
  body: Buffer;
  contentType?: string;
  delayMs?: number;
}

/**
 * A tiny document store: serves what was published at a path, like a presigned GET: 403 without
 * the right signature, 404 for an unknown path.
 */
async function documentServer() {
  const served = new Map<string, Served>();
  const server = await stub((req, _body, res) => {
    const url = new URL(req.url ?? '/', 'http://documents');
    const document = served.get(url.pathname);
    if (url.searchParams.get('X-Amz-Signature') !== SIGNATURE)
      return void res
        .writeHead(403, { 'content-type': 'application/xml' })
        .end('<Error><Code>AccessDenied</Code></Error>');
    if (!document) return void res.writeHead(404).end();
    const send = () =>
      res.writeHead(200, { 'content-type': document.contentType ?? 'application/pdf' }).end(document.body);
    if (document.delayMs) setTimeout(send, document.delayMs);
    else send();
  });
  const urlOf = (path: string, signature = SIGNATURE) =>
    `${server.url}${path}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=dev%2F20261101&X-Amz-Signature=${signature}`;
  return {
    ...server,
    /** Publishes a document; answers its presigned URL. */
    publish(body: Buffer, options: Omit<Served, 'body'> = {}) {
      const path = `/invoices/${randomUUID()}.pdf`;
      served.set(path, { body, ...options });
      return urlOf(path);
    },
    urlOf,
  };
}

const refusal = async (promise: Promise<unknown>): Promise<ExtractionError> => {
  const error = await promise.then(
    () => assert.fail('expected an ExtractionError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ExtractionError, String(error));
  return error;
};

/** Nothing secret in an error: not the key, not the document URL, not its signature. */
const assertNothingSecret = (error: Error, ...more: string[]) => {
  for (const secret of [API_KEY, SIGNATURE, ...more])
    assert.ok(!error.message.includes(secret), `the error message carries a secret: ${error.message}`);
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('unit: invoice extraction client (Azure Document Intelligence prebuilt-invoice v4.0) against its simulator over HTTP', () => {
  let simulator: RunningExtractionSimulator;
  let documents: Awaited<ReturnType<typeof documentServer>>;
  const control = (path: string, method = 'GET', body?: unknown) =>
    fetch(`${simulator.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const client = (overrides: Partial<Parameters<typeof createExtractionClient>[0]> = {}) =>
    createExtractionClient({ endpoint: simulator.url, apiKey: API_KEY, ...overrides });
  /** A raw request to the simulator's provider API, for what our client never sends. */
  const raw = (
    path: string,
    init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
  ) =>
    fetch(`${simulator.url}${path}`, {
      method: init.method ?? 'POST',
      headers: { 'ocp-apim-subscription-key': API_KEY, 'content-type': 'application/json', ...init.headers },
      body: init.body,
    });
  const analyzeUrl = `${API}/prebuilt-invoice:analyze?api-version=2024-11-30`;
  const errorOf = async (response: Response) =>
    ((await response.json()) as { error: { code: string; message: string; innererror?: { code: string } } }).error;

  /** Reads the analysis until it is no longer running. */
  async function settle(resultId: string, using: InvoiceExtractionClient = client()): Promise<AnalysisOutcome> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const outcome = await using.result(resultId);
      if (outcome.status !== 'running') return outcome;
      assert.ok(Date.now() < deadline, `analysis ${resultId} still running`);
      await sleep(20);
    }
  }
  /** Publishes `body` and analyses it to the end. */
  async function extract(body: Buffer, served: Omit<Served, 'body'> = {}): Promise<AnalysisOutcome> {
    const { resultId } = await client().analyze({ documentUrl: documents.publish(body, served) });
    return settle(resultId);
  }

  before(async () => {
    simulator = await startExtractionSimulator({ apiKey: API_KEY, processingMs: 60 });
    documents = await documentServer();
  });
  afterEach(async () => {
    assert.equal((await control('/reset', 'POST')).status, 204);
  });
  after(async () => {
    await simulator.close();
    await documents.close();
  });

  it('a PDF with every field succeeds: KES 1,250.50 is exactly 125050 minor units, the dates and details as read; the analysis is listed without the URL’s signature', async () => {
    const pdf = invoicePdf();
    const documentUrl = documents.publish(pdf);
    const { resultId } = await client().analyze({ documentUrl });
    assert.match(resultId, UUID);
    assert.deepEqual(await settle(resultId), {
      status: 'succeeded',
      invoice: {
        amountMinorUnits: 125050,
        currency: 'KES',
        issuedDate: '2026-11-01',
        dueDate: '2026-12-01',
        details: {
          invoice_id: 'INV-0042',
          vendor_name: 'Kariakoo Traders',
          customer_name: 'Nairobi Wholesale Ltd',
          amount_due_minor_units: 100025,
          confidence: 0.95,
        },
      },
    });
    const sha256 = createHash('sha256').update(pdf).digest('hex');
    const listed = (await (await control(`/analyses?sha256=${sha256}`)).json()) as SimulatedAnalysis[];
    assert.equal(listed.length, 1);
    const analysis = listed[0]!;
    assert.deepEqual(
      [analysis.resultId, analysis.source, analysis.contentType, analysis.format, analysis.sizeBytes, analysis.status],
      [resultId, 'url', 'application/pdf', 'pdf', pdf.length, 'succeeded'],
    );
    assert.equal(analysis.sourceUrl, documentUrl.slice(0, documentUrl.indexOf('?')));
    assert.ok(!JSON.stringify(simulator.analyses()).includes(SIGNATURE), 'the listing carries no signature');
    assert.deepEqual(simulator.analyses(), listed);
  });

  it('the Operation-Location is Azure’s: {endpoint}/documentintelligence/documentModels/prebuilt-invoice/analyzeResults/{uuid}?api-version=2024-11-30, and the result is Azure’s AnalyzeOperation', async () => {
    const response = await raw(analyzeUrl, { body: JSON.stringify({ urlSource: documents.publish(invoicePdf()) }) });
    assert.equal(response.status, 202);
    assert.equal(await response.text(), '');
    const location = response.headers.get('operation-location') ?? '';
    const match = new RegExp(
      `^${simulator.url}${API}/prebuilt-invoice/analyzeResults/([0-9a-f-]{36})\\?api-version=2024-11-30$`,
    ).exec(location);
    assert.ok(match && UUID.test(match[1]!), location);
    await settle(match[1]!);
    const read = await raw(new URL(location).pathname + new URL(location).search, { method: 'GET' });
    const body = (await read.json()) as {
      status: string;
      createdDateTime: string;
      lastUpdatedDateTime: string;
      analyzeResult: {
        apiVersion: string;
        modelId: string;
        content: string;
        pages: unknown[];
        documents: { docType: string; fields: Record<string, Record<string, unknown>> }[];
      };
    };
    assert.equal(body.status, 'succeeded');
    assert.ok(Date.parse(body.lastUpdatedDateTime) >= Date.parse(body.createdDateTime));
    assert.deepEqual([body.analyzeResult.apiVersion, body.analyzeResult.modelId], ['2024-11-30', 'prebuilt-invoice']);
    assert.ok(body.analyzeResult.content.includes('Total: KES 1,250.50'));
    const fields = body.analyzeResult.documents[0]!.fields;
    assert.equal(body.analyzeResult.documents[0]!.docType, 'invoice');
    assert.deepEqual(
      [fields.InvoiceTotal!.type, fields.InvoiceTotal!.valueCurrency, fields.InvoiceTotal!.content],
      ['currency', { amount: 1250.5, currencyCode: 'KES' }, 'KES 1,250.50'],
    );
    assert.deepEqual([fields.DueDate!.type, fields.DueDate!.valueDate], ['date', '2026-12-01']);
    assert.deepEqual([fields.VendorName!.type, fields.VendorName!.valueString], ['string', 'Kariakoo Traders']);
  });

  it('minor units follow the currency’s ISO 4217 exponent: UGX 150,000 is 150000, KES 1,250.10 is 125010 (no float error); more decimals than the currency has, or a currency we do not take, is failed Unusable', async () => {
    const ugx = await extract(invoicePdf({ Total: 'UGX 150,000', 'Amount due': 'UGX 150,000' }));
    assert.equal(ugx.status, 'succeeded');
    assert.deepEqual(ugx.status === 'succeeded' && [ugx.invoice.amountMinorUnits, ugx.invoice.currency], [
      150000,
      'UGX',
    ]);
    const kes = await extract(invoicePdf({ Total: 'KES 1,250.10' }));
    assert.equal(kes.status === 'succeeded' && kes.invoice.amountMinorUnits, 125010);

    const threeDecimals = await extract(invoicePdf({ Total: 'KES 1,250.505' }));
    assert.equal(threeDecimals.status, 'failed');
    assert.equal(threeDecimals.status === 'failed' && threeDecimals.code, 'UnusableAmount');
    assert.match(threeDecimals.status === 'failed' ? threeDecimals.reason : '', /KES has more than 2 decimal places/);
    const ugxCents = await extract(invoicePdf({ Total: 'UGX 150,000.50' }));
    assert.equal(ugxCents.status === 'failed' && ugxCents.code, 'UnusableAmount');
    const unknown = await extract(invoicePdf({ Total: 'XYZ 100.00' }));
    assert.deepEqual(unknown, {
      status: 'failed',
      code: 'UnusableCurrency',
      reason: "The invoice's currency (XYZ) is not one we accept.",
    });

    // The conversion itself: exact, bounded, positive.
    assert.deepEqual(toMinorUnits(1250.1, 2), { ok: true, minorUnits: 125010 });
    assert.deepEqual(toMinorUnits(0.07, 2), { ok: true, minorUnits: 7 });
    assert.deepEqual(toMinorUnits(9007199254740991, 0), { ok: true, minorUnits: Number.MAX_SAFE_INTEGER });
    assert.equal(toMinorUnits(9007199254740992, 0).ok, false);
    assert.deepEqual(toMinorUnits(90071992547409.9, 2), { ok: true, minorUnits: 9007199254740990 });
    assert.equal(toMinorUnits(90071992547410, 2).ok, false);
    assert.equal(toMinorUnits(1e21, 2).ok, false);
    assert.equal(toMinorUnits(1.5e-7, 2).ok, false);
    assert.equal(toMinorUnits(0, 2).ok, false);
    assert.equal(toMinorUnits(-5, 2).ok, false);
    assert.equal(toMinorUnits(Number.NaN, 2).ok, false);
  });

  it('an invoice without a due date, due before it was issued, without a total or with a date that does not exist is failed, saying why; due on the day of issue is fine', async () => {
    const noDue = await extract(invoicePdf({ 'Due date': undefined }));
    assert.deepEqual(noDue, {
      status: 'failed',
      code: 'UnusableDueDate',
      reason: 'No due date was found on the invoice.',
    });
    const backwards = await extract(invoicePdf({ 'Due date': '2026-10-01' }));
    assert.deepEqual(backwards, {
      status: 'failed',
      code: 'UnusableDates',
      reason: "The invoice's due date (2026-10-01) is before its issue date (2026-11-01).",
    });
    const noTotal = await extract(invoicePdf({ Total: undefined }));
    assert.equal(noTotal.status === 'failed' && noTotal.code, 'UnusableNoTotal');
    const impossible = await extract(invoicePdf({ 'Invoice date': '2026-02-30' }));
    assert.equal(impossible.status === 'failed' && impossible.code, 'UnusableIssueDate');
    const sameDay = await extract(invoicePdf({ 'Due date': '2026-11-01' }));
    assert.equal(sameDay.status === 'succeeded' && sameDay.invoice.dueDate, '2026-11-01');
  });

  it('a document with none of the invoice lines succeeds at Azure with an empty fields object, and is failed UnusableNoInvoice', async () => {
    const notes = Buffer.from('%PDF-1.7\nMeeting notes\nNothing to pay here\n%%EOF\n', 'latin1');
    const { resultId } = await client().analyze({ documentUrl: documents.publish(notes) });
    const outcome = await settle(resultId);
    assert.equal(outcome.status === 'failed' && outcome.code, 'UnusableNoInvoice');
    const body = (await (
      await raw(`${API}/prebuilt-invoice/analyzeResults/${resultId}?api-version=2024-11-30`, { method: 'GET' })
    ).json()) as { status: string; analyzeResult: { content: string; documents: { fields: object }[] } };
    assert.equal(body.status, 'succeeded');
    assert.deepEqual(body.analyzeResult.documents[0]!.fields, {});
    assert.equal(body.analyzeResult.content, 'Meeting notes\nNothing to pay here');
  });

  it('SIMULATE: unreadable fails the analysis with Azure’s InvalidContent; SIMULATE: unreadable-once fails the first analysis of those bytes, and a second analysis succeeds', async () => {
    const unreadable = await extract(invoicePdf({ SIMULATE: 'unreadable' }));
    assert.equal(unreadable.status, 'failed');
    assert.equal(unreadable.status === 'failed' && unreadable.code, 'InvalidContent');
    assert.match(unreadable.status === 'failed' ? unreadable.reason : '', /corrupted or its format is not supported/);

    const once = invoicePdf({ SIMULATE: 'unreadable-once' });
    const url = documents.publish(once);
    const first = await settle((await client().analyze({ documentUrl: url })).resultId);
    assert.equal(first.status === 'failed' && first.code, 'InvalidContent');
    const second = await settle((await client().analyze({ documentUrl: url })).resultId);
    assert.equal(second.status === 'succeeded' && second.invoice.amountMinorUnits, 125050);
    const sha256 = createHash('sha256').update(once).digest('hex');
    assert.deepEqual(
      simulator
        .analyses()
        .filter((a) => a.sha256 === sha256)
        .map((a) => [a.status, a.directive]),
      [
        ['failed', 'unreadable-once'],
        ['succeeded', 'unreadable-once'],
      ],
    );
  });

  it('the format is judged by the bytes, not the content type: plain text fails InvalidContent; a PNG, a JPEG, a base64Source and a document sent as the body are read', async () => {
    const text = await extract(Buffer.from(invoiceText()), { contentType: 'application/pdf' });
    assert.equal(text.status === 'failed' && text.code, 'InvalidContent');
    const png = await extract(Buffer.concat([PNG, Buffer.from(`\n${invoiceText({ Total: 'RWF 25,000' })}\n`)]), {
      contentType: 'image/png',
    });
    assert.deepEqual(png.status === 'succeeded' && [png.invoice.amountMinorUnits, png.invoice.currency], [
      25000,
      'RWF',
    ]);
    const jpeg = await extract(Buffer.concat([JPEG, Buffer.from(`\n${invoiceText()}\n`)]), {
      contentType: 'image/jpeg',
    });
    assert.equal(jpeg.status, 'succeeded');
    assert.deepEqual(
      simulator.analyses().map((a) => [a.format, a.contentType]),
      [
        [null, 'application/pdf'],
        ['png', 'image/png'],
        ['jpeg', 'image/jpeg'],
      ],
    );

    const base64 = await raw(analyzeUrl, { body: JSON.stringify({ base64Source: invoicePdf().toString('base64') }) });
    assert.equal(base64.status, 202);
    const fromBase64 = await settle(new URL(base64.headers.get('operation-location')!).pathname.split('/').pop()!);
    assert.equal(fromBase64.status, 'succeeded');
    const body = await raw(analyzeUrl, { headers: { 'content-type': 'application/pdf' }, body: invoicePdf() });
    assert.equal(body.status, 202);
    const fromBody = await settle(new URL(body.headers.get('operation-location')!).pathname.split('/').pop()!);
    assert.equal(fromBody.status, 'succeeded');
    assert.deepEqual(
      simulator
        .analyses()
        .slice(3)
        .map((a) => [a.source, a.contentType]),
      [
        ['base64', null],
        ['body', 'application/pdf'],
      ],
    );
  });

  it('a source answering 403 (or 404) is refused at submission: HTTP 400 ContentSourceNotAccessible, not transient, naming neither the URL nor its signature; nothing is analysed', async () => {
    const forged = documents.urlOf(`/invoices/${randomUUID()}.pdf`, 'f'.repeat(64));
    const forbidden = await refusal(client().analyze({ documentUrl: forged }));
    assert.deepEqual(
      [forbidden.details.httpStatus, forbidden.details.code, forbidden.details.transient],
      [400, 'ContentSourceNotAccessible', false],
    );
    assert.match(forbidden.message, /could not fetch the document/);
    assertNothingSecret(forbidden, forged, 'f'.repeat(64));
    const missing = documents.urlOf(`/invoices/${randomUUID()}.pdf`);
    const notFound = await refusal(client().analyze({ documentUrl: missing }));
    assert.deepEqual([notFound.details.code, notFound.details.transient], ['ContentSourceNotAccessible', false]);
    assertNothingSecret(notFound, missing);
    const notHttp = await refusal(client().analyze({ documentUrl: 'ftp://documents.example/invoice.pdf' }));
    assert.deepEqual([notHttp.details.httpStatus, notHttp.details.transient], [undefined, false]);
    assert.deepEqual(simulator.analyses(), []);
  });

  it('a source over the size limit is refused InvalidContentLength, a source slower than the simulator waits ContentSourceNotAccessible, a large request body InvalidContentLength', async () => {
    const small = await startExtractionSimulator({
      apiKey: API_KEY,
      processingMs: 10,
      maxDocumentBytes: 1024,
      sourceTimeoutMs: 200,
    });
    try {
      const smallClient = createExtractionClient({ endpoint: small.url, apiKey: API_KEY });
      const big = Buffer.concat([invoicePdf(), Buffer.alloc(2048, 0x20)]);
      const tooLarge = await refusal(smallClient.analyze({ documentUrl: documents.publish(big) }));
      assert.deepEqual(
        [tooLarge.details.httpStatus, tooLarge.details.code, tooLarge.details.transient],
        [400, 'InvalidContentLength', false],
      );
      assertNothingSecret(tooLarge);
      const slow = await refusal(
        smallClient.analyze({ documentUrl: documents.publish(invoicePdf(), { delayMs: 1_000 }) }),
      );
      assert.deepEqual([slow.details.code, slow.details.transient], ['ContentSourceNotAccessible', false]);
      const body = await fetch(`${small.url}${analyzeUrl}`, {
        method: 'POST',
        headers: { 'ocp-apim-subscription-key': API_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ base64Source: big.toString('base64') }),
      });
      assert.equal(body.status, 400);
      assert.equal((await errorOf(body)).innererror?.code, 'InvalidContentLength');
      const fits = await smallClient.analyze({ documentUrl: documents.publish(invoicePdf()) });
      assert.equal((await settle(fits.resultId, smallClient)).status, 'succeeded');
      assert.equal(small.analyses().length, 1);
    } finally {
      await small.close();
    }
  });

  it('a wrong or missing key is 401 in Azure’s envelope, not transient, and no key reaches an error', async () => {
    const wrongKey = 'wrong-extraction-key-9876543210';
    const wrong = await refusal(client({ apiKey: wrongKey }).analyze({ documentUrl: documents.publish(invoicePdf()) }));
    assert.deepEqual([wrong.details.httpStatus, wrong.details.code, wrong.details.transient], [401, '401', false]);
    assert.match(wrong.message, /refused our key.*invalid subscription key/);
    assertNothingSecret(wrong, wrongKey);
    const reading = await refusal(client({ apiKey: wrongKey }).result(randomUUID()));
    assert.deepEqual([reading.details.httpStatus, reading.details.transient], [401, false]);
    assertNothingSecret(reading, wrongKey);

    const missing = await raw(analyzeUrl, { headers: { 'ocp-apim-subscription-key': '' }, body: '{}' });
    assert.equal(missing.status, 401);
    const error = await errorOf(missing);
    assert.equal(error.code, '401');
    assert.match(error.message, /missing subscription key/);
    assert.deepEqual(simulator.analyses(), []);
  });

  it('an unknown result id is 404 OperationNotFound, not transient; a malformed id is refused before any request; a deleted result is unknown', async () => {
    const unknown = await refusal(client().result(randomUUID()));
    assert.deepEqual(
      [unknown.details.httpStatus, unknown.details.code, unknown.details.transient],
      [404, 'OperationNotFound', false],
    );
    assert.match(unknown.message, /does not know the analysis/);
    for (const malformed of ['../../documentModels', 'a'.repeat(129), '', 'id?api-version=1']) {
      const error = await refusal(client().result(malformed));
      assert.deepEqual([error.details.httpStatus, error.details.transient], [undefined, false]);
    }
    const { resultId } = await client().analyze({ documentUrl: documents.publish(invoicePdf()) });
    const path = `${API}/prebuilt-invoice/analyzeResults/${resultId}?api-version=2024-11-30`;
    assert.equal((await raw(path, { method: 'DELETE' })).status, 204);
    const gone = await refusal(client().result(resultId));
    assert.equal(gone.details.httpStatus, 404);
  });

  it('Azure failing (mode error) is transient HTTP 500, throttled (mode throttle) transient HTTP 429 with retryAfterMs from Retry-After, on submitting and on reading alike', async () => {
    const documentUrl = documents.publish(invoicePdf());
    await control('/mode', 'PATCH', { analyze: 'error' });
    const failing = await refusal(client().analyze({ documentUrl }));
    assert.deepEqual(
      [failing.details.httpStatus, failing.details.code, failing.details.transient],
      [500, 'InternalServerError', true],
    );
    assertNothingSecret(failing, documentUrl);
    await control('/mode', 'PATCH', { analyze: 'throttle' });
    const throttled = await refusal(client().analyze({ documentUrl }));
    assert.deepEqual(
      [throttled.details.httpStatus, throttled.details.transient, throttled.details.retryAfterMs],
      [429, true, 1000],
    );
    assertNothingSecret(throttled, documentUrl);
    assert.deepEqual(simulator.analyses(), []);

    await control('/mode', 'PATCH', { analyze: 'normal', result: 'error' });
    const { resultId } = await client().analyze({ documentUrl });
    const reading = await refusal(client().result(resultId));
    assert.deepEqual([reading.details.httpStatus, reading.details.transient], [500, true]);
    await control('/mode', 'PATCH', { result: 'throttle' });
    const limited = await refusal(client().result(resultId));
    assert.deepEqual(
      [limited.details.httpStatus, limited.details.transient, limited.details.retryAfterMs],
      [429, true, 1000],
    );
    await control('/mode', 'PATCH', { result: 'normal' });
    assert.equal((await settle(resultId)).status, 'succeeded');
  });

  it('no answer in time is transient: a held analyze (mode timeout) with a small timeoutMs, a held result read; an unreachable provider is transient too', async () => {
    await control('/mode', 'PATCH', { analyze: 'timeout', result: 'timeout' });
    const started = Date.now();
    const late = await refusal(client({ timeoutMs: 200 }).analyze({ documentUrl: documents.publish(invoicePdf()) }));
    assert.deepEqual([late.details.httpStatus, late.details.transient], [undefined, true]);
    assert.match(late.message, /did not answer within 200 ms/);
    assert.ok(Date.now() - started < 5_000);
    assertNothingSecret(late);
    const lateRead = await refusal(client({ timeoutMs: 200 }).result(randomUUID()));
    assert.equal(lateRead.details.transient, true);

    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await refusal(
      createExtractionClient({ endpoint: `http://127.0.0.1:${port}`, apiKey: API_KEY }).result(randomUUID()),
    );
    assert.deepEqual([unreachable.details.httpStatus, unreachable.details.transient], [undefined, true]);
    assert.match(unreachable.message, /ECONNREFUSED/);
  });

  it('a slow document (SIMULATE: slow) stays notStarted then running for 10 × processingMs, with Retry-After in whole seconds', async () => {
    await control('/mode', 'PATCH', { processingMs: 200 });
    const { resultId } = await client().analyze({ documentUrl: documents.publish(invoicePdf({ SIMULATE: 'slow' })) });
    const path = `${API}/prebuilt-invoice/analyzeResults/${resultId}?api-version=2024-11-30`;
    const early = await raw(path, { method: 'GET' });
    assert.equal(((await early.json()) as { status: string }).status, 'notStarted');
    assert.match(early.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    await sleep(800);
    const outcome = await client().result(resultId);
    assert.deepEqual(outcome, { status: 'running', retryAfterMs: 2000 });
    assert.equal(simulator.analyses()[0]!.status, 'running');
    await sleep(1_400);
    assert.equal((await client().result(resultId)).status, 'succeeded');
  });

  it('an Operation-Location pointing at another host, another model or a malformed id (or none) is refused, not transient', async () => {
    const id = randomUUID();
    let location: string | undefined;
    const seen: { key?: string; body: string; path?: string }[] = [];
    const provider = await stub((req, body, res) => {
      seen.push({ key: req.headers['ocp-apim-subscription-key'] as string, body, path: req.url });
      res.writeHead(202, location === undefined ? {} : { 'operation-location': location }).end();
    });
    try {
      const analyze = () =>
        createExtractionClient({ endpoint: `${provider.url}/`, apiKey: API_KEY }).analyze({
          documentUrl: documents.publish(invoicePdf()),
        });
      const path = (model: string, resultId: string) =>
        `${API}/${model}/analyzeResults/${resultId}?api-version=2024-11-30`;
      for (const elsewhere of [
        `https://attacker.example${path('prebuilt-invoice', id)}`,
        `${provider.url.replace('127.0.0.1', 'localhost')}${path('prebuilt-invoice', id)}`,
        `${provider.url}${path('prebuilt-layout', id)}`,
        `${provider.url}${path('prebuilt-invoice', `..%2F${id}`)}`,
        `${provider.url}${path('prebuilt-invoice', `${id}/pdf`)}`,
        `http://user:pass@${provider.url.slice('http://'.length)}${path('prebuilt-invoice', id)}`,
        'not a url',
        undefined,
      ]) {
        location = elsewhere;
        const error = await refusal(analyze());
        assert.deepEqual([error.details.httpStatus, error.details.transient], [202, false], String(elsewhere));
        assertNothingSecret(error);
      }
      location = `${provider.url}${path('prebuilt-invoice', id)}`;
      assert.deepEqual(await analyze(), { resultId: id });
      const last = seen[seen.length - 1]!;
      assert.equal(last.key, API_KEY);
      assert.equal(last.path, `${API}/prebuilt-invoice:analyze?api-version=2024-11-30`);
      assert.match((JSON.parse(last.body) as { urlSource: string }).urlSource, /X-Amz-Signature=/);
    } finally {
      await provider.close();
    }
  });

  it('answers the simulator never gives: a failed status maps the inner code, canceled is failed, a body failing the schema is refused, unstorable text is made storable, Retry-After is bounded, an echoed URL or key is redacted', async () => {
    const answers: [number, Record<string, string>, unknown][] = [];
    const provider = await stub((req, body, res) => {
      const [status, headers, answer] = answers.shift() ?? [500, {}, ''];
      res
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(
          typeof answer === 'function'
            ? (answer as (b: string) => string)(`${req.headers['ocp-apim-subscription-key']} ${body}`)
            : JSON.stringify(answer),
        );
    });
    const operation = (extra: object) => ({
      createdDateTime: '2026-11-01T10:00:00Z',
      lastUpdatedDateTime: '2026-11-01T10:00:01Z',
      ...extra,
    });
    const succeeded = (fields: object, docType = 'invoice') =>
      operation({
        status: 'succeeded',
        analyzeResult: {
          apiVersion: '2024-11-30',
          modelId: 'prebuilt-invoice',
          content: '',
          pages: [],
          documents: [{ docType, spans: [], fields, confidence: 0.8123 }],
        },
      });
    const dates = {
      InvoiceDate: { type: 'date', valueDate: '2024-02-29' },
      DueDate: { type: 'date', valueDate: '2024-03-29' },
    };
    try {
      const azure = createExtractionClient({ endpoint: provider.url, apiKey: API_KEY });
      const id = randomUUID();
      answers.push([
        200,
        {},
        operation({
          status: 'failed',
          error: {
            code: 'InvalidRequest',
            message: 'Invalid request.',
            innererror: { code: 'InvalidContentDimensions', message: 'The input image dimensions are out of range.' },
          },
        }),
      ]);
      assert.deepEqual(await azure.result(id), {
        status: 'failed',
        code: 'InvalidContentDimensions',
        reason: 'The document could not be read: its image is too small or too large.',
      });
      answers.push([200, {}, operation({ status: 'canceled' })]);
      assert.equal(((await azure.result(id)) as { code: string }).code, 'Canceled');
      answers.push([200, {}, operation({ status: 'failed', error: { code: 'Weird code <script>', message: 'x' } })]);
      assert.deepEqual(await azure.result(id), {
        status: 'failed',
        code: 'AnalysisFailed',
        reason: 'The extraction provider could not analyse the document (AnalysisFailed).',
      });
      answers.push([200, {}, { status: 'finished' }]);
      const unreadable = await refusal(azure.result(id));
      assert.deepEqual([unreadable.details.httpStatus, unreadable.details.transient], [200, false]);

      answers.push([
        200,
        {},
        succeeded(
          {
            InvoiceTotal: {
              type: 'currency',
              valueCurrency: { amount: 1250.1, currencySymbol: '$', currencyCode: 'USD' },
            },
            AmountDue: { type: 'currency', valueCurrency: { amount: 10.5, currencyCode: 'EUR' } },
            TotalTax: { type: 'currency', valueCurrency: { amount: 0.1 } },
            VendorName: { type: 'string', valueString: `Acme\u0000 \ud800Traders ${'x'.repeat(600)}` },
            CustomerName: { type: 'string', content: 'Only content' },
            InvoiceId: { type: 'number', valueNumber: 42 },
            ...dates,
          },
          'prebuilt:invoice',
        ),
      ]);
      const outcome = await azure.result(id);
      assert.equal(outcome.status, 'succeeded');
      const invoice = outcome.status === 'succeeded' ? outcome.invoice : assert.fail();
      assert.deepEqual(
        [invoice.amountMinorUnits, invoice.currency, invoice.issuedDate, invoice.dueDate],
        [125010, 'USD', '2024-02-29', '2024-03-29'],
      );
      const vendor = invoice.details.vendor_name as string;
      assert.equal(Array.from(vendor).length, 500);
      assert.ok(!vendor.includes('\u0000') && (vendor as string & { isWellFormed(): boolean }).isWellFormed());
      assert.deepEqual(
        { ...invoice.details, vendor_name: undefined },
        { vendor_name: undefined, customer_name: 'Only content', total_tax_minor_units: 10, confidence: 0.812 },
        'an amount in another currency, a field of another type are left out',
      );

      for (const [total, code] of [
        [{ type: 'currency', valueCurrency: { amount: 1e21, currencyCode: 'USD' } }, 'UnusableAmount'],
        [{ type: 'currency', valueCurrency: { amount: 0, currencyCode: 'USD' } }, 'UnusableAmount'],
        [{ type: 'currency', valueCurrency: { amount: 10, currencySymbol: '$' } }, 'UnusableCurrency'],
        [{ type: 'number', valueNumber: 10 }, 'UnusableNoTotal'],
      ] as const) {
        answers.push([200, {}, succeeded({ InvoiceTotal: total, ...dates })]);
        assert.equal(((await azure.result(id)) as { code: string }).code, code, JSON.stringify(total));
      }
      answers.push([
        200,
        {},
        succeeded(
          { InvoiceTotal: { type: 'currency', valueCurrency: { amount: 10, currencyCode: 'USD' } }, ...dates },
          'receipt.retailMeal',
        ),
      ]);
      assert.equal(((await azure.result(id)) as { code: string }).code, 'UnusableNoInvoice');
      answers.push([200, {}, operation({ status: 'succeeded' })]);
      assert.equal(((await azure.result(id)) as { code: string }).code, 'UnusableNoResult');

      answers.push([200, { 'retry-after': '5' }, operation({ status: 'notStarted' })]);
      assert.deepEqual(await azure.result(id), { status: 'running', retryAfterMs: 5000 });
      answers.push([200, { 'retry-after': '100000' }, operation({ status: 'running' })]);
      assert.deepEqual(await azure.result(id), { status: 'running', retryAfterMs: 60_000 });
      answers.push([200, {}, operation({ status: 'running' })]);
      assert.deepEqual(await azure.result(id), { status: 'running' });

      // A provider (or a proxy) echoing the request: the key and the document URL are redacted.
      const documentUrl = documents.publish(invoicePdf());
      answers.push([
        400,
        {},
        (echo: string) =>
          JSON.stringify({
            error: {
              code: 'InvalidArgument',
              message: 'Invalid argument.',
              innererror: { code: 'InvalidParameter', message: `bad request ${echo}` },
            },
          }),
      ]);
      const echoed = await refusal(azure.analyze({ documentUrl }));
      assert.deepEqual(
        [echoed.details.httpStatus, echoed.details.code, echoed.details.transient],
        [400, 'InvalidParameter', false],
      );
      assert.match(echoed.message, /\[redacted\]/);
      assertNothingSecret(echoed, documentUrl);
      answers.push([502, { 'content-type': 'text/html' }, () => `<html>Bad Gateway ${documentUrl}</html>`]);
      const gateway = await refusal(azure.analyze({ documentUrl }));
      assert.deepEqual([gateway.details.httpStatus, gateway.details.transient], [502, true]);
      assertNothingSecret(gateway, documentUrl);
      answers.push([
        503,
        { 'retry-after': new Date(Date.now() + 3_000).toUTCString() },
        { error: { code: 'ServiceUnavailable', message: 'A transient error occurred. Try again.' } },
      ]);
      const unavailable = await refusal(azure.result(id));
      assert.ok(
        unavailable.details.transient &&
          unavailable.details.retryAfterMs! > 0 &&
          unavailable.details.retryAfterMs! <= 3_000,
      );
    } finally {
      await provider.close();
    }
  });

  it('the simulator refuses what Azure refuses: another api-version or path (404, the gateway’s envelope), another model (404 ModelNotFound), neither or both sources, a urlSource that is not http(s), bad Base64, a body that is not JSON, a media type it does not take', async () => {
    const otherVersion = await raw(`${API}/prebuilt-invoice:analyze?api-version=2023-07-31`, { body: '{}' });
    assert.equal(otherVersion.status, 404);
    assert.deepEqual(await errorOf(otherVersion), { code: '404', message: 'Resource not found' });
    assert.equal((await raw(`${API}/prebuilt-invoice:analyze`, { body: '{}' })).status, 404);
    const otherPath = await raw(`/formrecognizer/documentModels/prebuilt-invoice:analyze?api-version=2024-11-30`, {
      body: '{}',
    });
    assert.deepEqual([otherPath.status, (await errorOf(otherPath)).code], [404, '404']);
    const otherModel = await raw(`${API}/prebuilt-receipt:analyze?api-version=2024-11-30`, {
      body: JSON.stringify({ urlSource: documents.publish(invoicePdf()) }),
    });
    assert.equal(otherModel.status, 404);
    assert.deepEqual(await errorOf(otherModel), {
      code: 'NotFound',
      message: 'Resource not found.',
      innererror: { code: 'ModelNotFound', message: 'The requested model was not found.' },
    });

    const refusals: [string | Buffer, Record<string, string>, number, string, string][] = [
      ['{}', {}, 400, 'InvalidArgument', 'ParameterMissing'],
      [JSON.stringify({ urlSource: null }), {}, 400, 'InvalidArgument', 'ParameterMissing'],
      [
        JSON.stringify({ urlSource: documents.publish(invoicePdf()), base64Source: 'JVBERi0=' }),
        {},
        400,
        'InvalidArgument',
        'InvalidParameter',
      ],
      [JSON.stringify({ urlSource: 'file:///etc/passwd' }), {}, 400, 'InvalidArgument', 'InvalidContentSourceFormat'],
      [
        JSON.stringify({ urlSource: '/relative/invoice.pdf' }),
        {},
        400,
        'InvalidArgument',
        'InvalidContentSourceFormat',
      ],
      [JSON.stringify({ urlSource: 42 }), {}, 400, 'InvalidArgument', 'InvalidContentSourceFormat'],
      [JSON.stringify({ base64Source: 'not base64!' }), {}, 400, 'InvalidArgument', 'InvalidContentSourceFormat'],
      ['{"urlSource": ', {}, 400, 'InvalidArgument', 'InvalidParameter'],
      ['urlSource=x', { 'content-type': 'application/x-www-form-urlencoded' }, 415, 'UnsupportedMediaType', ''],
    ];
    for (const [body, headers, status, code, inner] of refusals) {
      const response = await raw(analyzeUrl, { body, headers });
      assert.equal(response.status, status, String(body));
      const error = await errorOf(response);
      assert.deepEqual([error.code, error.innererror?.code ?? ''], [code, inner], String(body));
    }
    const parameterMissing = await errorOf(await raw(analyzeUrl, { body: '{}' }));
    assert.deepEqual(parameterMissing, {
      code: 'InvalidArgument',
      message: 'Invalid argument.',
      innererror: { code: 'ParameterMissing', message: 'The parameter urlSource or base64Source is required.' },
    });
    assert.deepEqual(simulator.analyses(), []);
  });

  it('the control API’s reset forgets analyses and fault modes; its mode rejects what it does not know', async () => {
    const { resultId } = await client().analyze({ documentUrl: documents.publish(invoicePdf()) });
    await control('/mode', 'PATCH', { analyze: 'error', processingMs: 0 });
    assert.equal((await control('/mode', 'PATCH', { analyze: 'sometimes' })).status, 400);
    assert.equal((await control('/reset', 'POST')).status, 204);
    assert.deepEqual(await (await control('/mode')).json(), { analyze: 'normal', result: 'normal', processingMs: 60 });
    assert.deepEqual(simulator.analyses(), []);
    assert.equal((await refusal(client().result(resultId))).details.httpStatus, 404);
  });
});

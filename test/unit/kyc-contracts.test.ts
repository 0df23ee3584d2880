import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createKycProviderClient, type DocumentVerificationRequest } from '../../providers/kyc/client';
import { signV2 } from '../../providers/kyc/signature';
import { simulatorCertificate } from '../../simulators/server';
import { type RunningKycSimulator, startKycSimulator } from '../../simulators/kyc';
import {
  decodeBody,
  differences,
  encodeBody,
  type Exchange,
  exchange,
  loadExchanges,
  sampleImage,
  startFakeProvider,
} from '../contracts/contract';

/**
 * The identity-verification provider's recorded exchanges (test/contracts/kyc), checked on both
 * sides over HTTP: our client sends exactly the documented request and reads the documented
 * answer; the simulator takes that request and answers exactly that.
 */
const fixtures = loadExchanges('kyc');
const fixture = (call: string) => exchange(fixtures, call);
const PARTNER_ID = '2101';
const API_KEY = 'sim-api-key-0123456789';
const JOB_ID = '7f6a1c2e-5b7d-4c1a-9e0f-0123456789ab';
const USER_ID = '0b9f2c1e-3d4a-4e5f-8a6b-9c0d1e2f3a4b';
const JPEG = sampleImage('image/jpeg');
const PNG = sampleImage('image/png');

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
/** A v2 answer or callback body signed now with the partner's key (fixtures hold sample signatures). */
function signedNow<T extends Record<string, unknown>>(body: T): T {
  const timestamp = new Date().toISOString();
  return { ...body, timestamp, signature: signV2(API_KEY, PARTNER_ID, timestamp) };
}

function request(version: 'v2' | 'v3'): DocumentVerificationRequest {
  return {
    apiVersion: version,
    jobId: JOB_ID,
    userId: USER_ID,
    country: 'KE',
    idType: 'NATIONAL_ID',
    idNumber: '12345670',
    applicant: { name: 'Amina Wanjiru Otieno', email: 'amina@example.test', phone: '+254712345678' },
    consent: {
      granted: true,
      grantedAt: new Date('2026-11-23T09:59:00.000Z'),
      noticeLanguage: 'EN',
      privacyPolicyUrl: 'https://lender.example/privacy',
    },
    callbackUrl: `https://lender.example/v1/kyc/provider-callbacks/${version}`,
    images:
      version === 'v2'
        ? { selfie: JPEG, documentFront: JPEG, documentBack: JPEG, livenessImages: [JPEG] }
        : {
            selfie: JPEG,
            documentFront: JPEG,
            documentBack: PNG,
            livenessImages: Array.from({ length: 6 }, () => JPEG),
          },
  };
}

describe('provider contracts: the identity-verification client sends and reads exactly the recorded exchanges', () => {
  async function withFake<T>(
    exchanges: Exchange[],
    work: (client: ReturnType<typeof createKycProviderClient>) => Promise<T>,
    extra: { ca?: string; uploadHosts?: string[] } = {},
  ) {
    const fake = await startFakeProvider(exchanges);
    try {
      const client = createKycProviderClient({ baseUrl: fake.url, partnerId: PARTNER_ID, apiKey: API_KEY, ...extra });
      const result = await work(client);
      for (const each of exchanges) {
        const sent = fake.requestsFor(each);
        assert.ok(sent.length > 0, `${each.call}: not sent`);
        for (const one of sent) assert.deepEqual(differences(each, 'request', one), [], each.call);
      }
      return result;
    } finally {
      await fake.close();
    }
  }

  it('v2 upload: the signed prepare request, then the zip PUT to the presigned URL as given', async () => {
    const upload = clone(fixture('v2 upload'));
    const put = fixture('v2 zip upload');
    // The storage URL points at the fake provider (another path of it), kept otherwise as documented.
    const submitted = await (async () => {
      const server = await startFakeProvider([put], { tls: true });
      try {
        (upload.answer.body as { upload_url: string }).upload_url = `${server.url}${put.request.path}`;
        const result = await withFake([upload], (client) => client.submitDocumentVerification(request('v2')), {
          ca: simulatorCertificate().cert,
          uploadHosts: ['localhost'],
        });
        const [zip] = server.requestsFor(put);
        assert.ok(zip, 'the zip was PUT to the presigned URL');
        assert.deepEqual(differences(put, 'request', zip), []);
        return result;
      } finally {
        await server.close();
      }
    })();
    assert.deepEqual(submitted, { providerJobId: '0000123456' });
  });

  it('v2 upload of a job id that exists is refused, not retried', async () => {
    await assert.rejects(
      withFake([fixture('v2 upload of a job id that exists')], (client) =>
        client.submitDocumentVerification(request('v2')),
      ),
      (error: Error & { retryable?: boolean; status?: number }) => error.status === 400 && error.retryable === false,
    );
  });

  it('v2 job status: the signed lookup, and the verified answer read as a verdict', async () => {
    const lookup = clone(fixture('v2 job status, complete'));
    lookup.answer.body = signedNow(lookup.answer.body as Record<string, unknown>);
    const status = await withFake([lookup], (client) =>
      client.jobStatus({ apiVersion: 'v2', jobId: JOB_ID, userId: USER_ID }),
    );
    assert.deepEqual(status, {
      state: 'final',
      category: 'APPROVED',
      resultCode: '0810',
      resultText: 'Document Verified',
      providerJobId: '0000123456',
      userId: USER_ID,
      isFinal: true,
    });
  });

  it('v2 token: an SDK session bound to our job and applicant', async () => {
    const session = await withFake([fixture('v2 token')], (client) =>
      client.createSdkSession({
        apiVersion: 'v2',
        jobId: JOB_ID,
        userId: USER_ID,
        callbackUrl: 'https://lender.example/v1/kyc/provider-callbacks/v2',
      }),
    );
    assert.match(session.token, /^\S{20,}$/);
  });

  it('v3 token and enhanced document verification: headers, multipart fields, the accepted answer', async () => {
    const submitted = await withFake([fixture('v3 token'), fixture('v3 enhanced document verification')], (client) =>
      client.submitDocumentVerification(request('v3')),
    );
    assert.deepEqual(submitted, { providerJobId: 'job_01jd7k8m9n0p1q2r3s4t5v6w7x' });
  });

  it('v3 token for an SDK session: multipart, never JSON', async () => {
    await withFake([fixture('v3 token for an SDK session')], (client) =>
      client.createSdkSession({
        apiVersion: 'v3',
        jobId: JOB_ID,
        userId: USER_ID,
        callbackUrl: 'https://lender.example/v1/kyc/provider-callbacks/v3',
      }),
    );
  });

  it('v3 status: clear is approved, processing pending, not_found unknown (no result codes)', async () => {
    const lookup = {
      apiVersion: 'v3' as const,
      jobId: JOB_ID,
      userId: USER_ID,
      providerJobId: 'job_01jd7k8m9n0p1q2r3s4t5v6w7x',
    };
    assert.deepEqual(await withFake([fixture('v3 token'), fixture('v3 status, final')], (c) => c.jobStatus(lookup)), {
      state: 'final',
      category: 'APPROVED',
      resultCode: 'clear',
      resultText: 'Document Verified',
      providerJobId: lookup.providerJobId,
      userId: USER_ID,
      isFinal: true,
    });
    assert.deepEqual(
      await withFake([fixture('v3 token'), fixture('v3 status, processing')], (c) => c.jobStatus(lookup)),
      { state: 'processing' },
    );
    assert.deepEqual(
      await withFake([fixture('v3 token'), fixture('v3 status, not found')], (c) => c.jobStatus(lookup)),
      { state: 'not_found' },
    );
  });

  it('v3 replay: accepted', async () => {
    const answer = await withFake([fixture('v3 token'), fixture('v3 replay callback')], (client) =>
      client.replayCallback('job_01jd7k8m9n0p1q2r3s4t5v6w7x'),
    );
    assert.equal(answer, 'accepted');
  });

  it('callbacks of both generations are read as the provider sends them (signature checked, job found)', () => {
    const client = createKycProviderClient({ baseUrl: 'http://127.0.0.1:1', partnerId: PARTNER_ID, apiKey: API_KEY });
    const v2 = fixture('v2 result callback');
    const parsedV2 = client.parseCallback(
      'v2',
      {},
      JSON.stringify(signedNow(v2.request.body as Record<string, unknown>)),
    );
    assert.deepEqual(parsedV2, {
      apiVersion: 'v2',
      eventId: 'v2:0000123456:0810:true',
      providerJobId: '0000123456',
      jobId: JOB_ID,
      userId: USER_ID,
    });
    const v3 = fixture('v3 result callback');
    const timestamp = new Date().toISOString();
    const headers = {
      ...v3.request.headers,
      'response-timestamp': timestamp,
      'response-signature': signV2(API_KEY, PARTNER_ID, timestamp),
    };
    assert.deepEqual(client.parseCallback('v3', headers, JSON.stringify(v3.request.body)), {
      apiVersion: 'v3',
      eventId: 'v3:job_01jd7k8m9n0p1q2r3s4t5v6w7x:clear',
      providerJobId: 'job_01jd7k8m9n0p1q2r3s4t5v6w7x',
      jobId: JOB_ID,
      userId: USER_ID,
    });
    assert.equal(
      client.parseCallback('v3', { ...headers, 'response-signature': signV2('wrong', PARTNER_ID, timestamp) }, '{}'),
      undefined,
    );
  });
});

describe('provider contracts: the identity-verification simulator takes the recorded requests and answers exactly as recorded', () => {
  let simulator: RunningKycSimulator;
  let callbacks: {
    server: Server;
    url: string;
    received: { path: string; headers: IncomingHttpHeaders; body: unknown }[];
  };
  const control = (path: string, method: string, body?: unknown) =>
    fetch(`${simulator.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  before(async () => {
    simulator = await startKycSimulator({
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      processingMs: 30,
      callbackDelayMs: 10,
      callbackAllowList: ['https://lender.example/', 'http://127.0.0.1:'],
    });
    const received: (typeof callbacks)['received'] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({
          path: req.url ?? '',
          headers: req.headers,
          body: JSON.parse(Buffer.concat(chunks).toString()),
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    callbacks = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
  });
  after(async () => {
    await simulator.close();
    callbacks.server.close();
  });
  beforeEach(async () => {
    await control('/reset', 'POST');
    callbacks.received.length = 0;
  });

  /** Sends a fixture's request to the simulator, with `fresh` values where the fixture holds samples. */
  async function send(each: Exchange, fresh: { path?: string; headers?: Record<string, string>; body?: unknown } = {}) {
    const requestToSend = { ...each.request, ...(fresh.body !== undefined && { body: fresh.body }) };
    const { body, contentType } = await encodeBody(requestToSend);
    const headers = { ...each.request.headers, ...fresh.headers, ...(contentType && { 'content-type': contentType }) };
    const response = await fetch(`${simulator.url}${fresh.path ?? each.request.path}`, {
      method: each.request.method,
      headers,
      body,
    });
    const text = await response.text();
    return { status: response.status, ...(text && { body: JSON.parse(text) as unknown }) };
  }
  const signedBody = (each: Exchange, changes: Record<string, unknown> = {}) =>
    signedNow({ ...(each.request.body as Record<string, unknown>), ...changes });
  const matches = (each: Exchange, answer: unknown) =>
    assert.deepEqual(differences(each, 'answer', answer), [], each.call);

  async function untilFinal(check: () => Promise<boolean>) {
    for (let i = 0; i < 200 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  it('v2: upload, the zip PUT to the presigned URL, a reused job id, the signed job status, the token', async () => {
    const upload = fixture('v2 upload');
    const prepared = await send(upload, { body: signedBody(upload) });
    matches(upload, prepared);
    const put = fixture('v2 zip upload');
    const zip = await encodeBody(put.request);
    const uploadUrl = (prepared.body as { upload_url: string }).upload_url;
    const status = await new Promise<number>((resolve, reject) => {
      const req = https.request(
        uploadUrl,
        { method: 'PUT', headers: { 'content-type': zip.contentType! }, ca: simulator.certificate },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end(zip.body);
    });
    assert.equal(status, put.answer.status);
    const [job] = simulator.jobs();
    assert.deepEqual(
      [job!.received.selfie, job!.received.documentFront, job!.received.documentBack, job!.received.livenessImages],
      [true, true, true, 1],
      'image files in the zip are read',
    );
    const reused = fixture('v2 upload of a job id that exists');
    matches(reused, await send(reused, { body: signedBody(reused) }));

    const lookup = fixture('v2 job status, complete');
    let answer: Awaited<ReturnType<typeof send>> | undefined;
    await untilFinal(async () => {
      answer = await send(lookup, { body: signedBody(lookup) });
      return (answer.body as { job_complete?: boolean }).job_complete === true;
    });
    matches(lookup, answer);
    const token = fixture('v2 token');
    matches(token, await send(token, { body: signedBody(token) }));
  });

  it('v2: the result callback the simulator sends is the recorded one, every partner_params key echoed as a string', async () => {
    const upload = fixture('v2 upload');
    const prepared = await send(upload, {
      body: signedBody(upload, { callback_url: `${callbacks.url}/v1/kyc/provider-callbacks/v2` }),
    });
    const zip = await encodeBody(fixture('v2 zip upload').request);
    await new Promise<void>((resolve, reject) => {
      const req = https.request(
        (prepared.body as { upload_url: string }).upload_url,
        { method: 'PUT', headers: { 'content-type': 'application/zip' }, ca: simulator.certificate },
        (res) => {
          res.resume();
          resolve();
        },
      );
      req.on('error', reject);
      req.end(zip.body);
    });
    await untilFinal(async () => callbacks.received.length > 0);
    const [received] = callbacks.received;
    assert.deepEqual(differences(fixture('v2 result callback'), 'request', { method: 'POST', ...received }), []);
  });

  it('v3: tokens, enhanced document verification, status in its three forms, replay, and the callback', async () => {
    const apiToken = fixture('v3 token');
    const minted = await send(apiToken);
    matches(apiToken, minted);
    const token = (minted.body as { token: string }).token;
    const session = fixture('v3 token for an SDK session');
    matches(session, await send(session));

    await control('/', 'PATCH', { holdJobs: true });
    const edv = fixture('v3 enhanced document verification');
    const body = clone(edv.request.body) as Record<string, unknown>;
    body.callback_url = `${callbacks.url}/v1/kyc/provider-callbacks/v3`;
    const accepted = await send(edv, { headers: { 'smileid-token': token }, body });
    matches(edv, accepted);
    const jobId = (accepted.body as { job_id: string }).job_id;

    const processing = fixture('v3 status, processing');
    matches(processing, await send(processing, { path: `/v3/status/${jobId}`, headers: { 'smileid-token': token } }));
    await control(`/jobs/${jobId}/release`, 'POST');
    const final = fixture('v3 status, final');
    let answer: Awaited<ReturnType<typeof send>> | undefined;
    await untilFinal(async () => {
      answer = await send(final, { path: `/v3/status/${jobId}`, headers: { 'smileid-token': token } });
      return answer.status === 200;
    });
    matches(final, answer);
    const missing = fixture('v3 status, not found');
    matches(missing, await send(missing, { headers: { 'smileid-token': token } }));

    await untilFinal(async () => callbacks.received.length > 0);
    const [received] = callbacks.received;
    assert.deepEqual(differences(fixture('v3 result callback'), 'request', { method: 'POST', ...received }), []);

    const replay = fixture('v3 replay callback');
    matches(replay, await send(replay, { path: `/v3/replay/${jobId}`, headers: { 'smileid-token': token } }));
  });

  it('v3: a session token is for one submission, by its own user, for its own partner', async () => {
    const session = fixture('v3 token for an SDK session');
    const minted = await send(session);
    const token = (minted.body as { token: string }).token;
    const edv = fixture('v3 enhanced document verification');
    const as = (headers: Record<string, string>) => send(edv, { headers: { 'smileid-token': token, ...headers } });
    assert.equal((await as({ 'user-id': 'someone-else' })).status, 403, 'another user');
    assert.equal((await as({ 'smileid-partner-id': '999999' })).status, 401, 'another partner');
    assert.equal((await as({})).status, 202, 'its own user');
    assert.equal((await as({})).status, 401, 'used once only');
  });

  it('the recorded requests decode to what the fixtures say (the encoder and decoder agree)', async () => {
    for (const each of fixtures.values()) {
      if (each.request.body === undefined) continue;
      const { body, contentType } = await encodeBody(each.request);
      const decoded = await decodeBody({ 'content-type': contentType! }, Buffer.from(body!));
      if (contentType!.startsWith('application/zip')) {
        assert.deepEqual(
          (decoded as { entries: string[] }).entries,
          (each.request.body as { entries: string[] }).entries,
        );
      } else assert.deepEqual(decoded, each.request.body, each.call);
    }
  });
});

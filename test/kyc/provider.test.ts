import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createKycProviderClient, type JobStatus, KycProviderError } from '../../providers/kyc/client';
import { signV2 } from '../../providers/kyc/signature';
import { type RunningKycSimulator, startKycSimulator } from '../../simulators/kyc';

const PARTNER_ID = '2101';
const API_KEY = 'sim-api-key-0123456789';
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A stand-in for our callback route: records what the provider sends. */
async function callbackReceiver() {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, received, server };
}

async function until<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('identity-verification provider: client and simulator over HTTP (both generations)', () => {
  let simulator: RunningKycSimulator;
  let receiver: Awaited<ReturnType<typeof callbackReceiver>>;
  let client: ReturnType<typeof createKycProviderClient>;
  const control = (path: string, method: string, body?: unknown) =>
    fetch(`${simulator.url}/_control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const callbacksFor = (job: string) =>
    receiver.received
      .map((r) => ({
        raw: r,
        parsed: client.parseCallback(r.headers['response-timestamp'] ? 'v3' : 'v2', r.headers, r.body),
      }))
      .filter((c) => c.raw.body.includes(job));
  const finalStatus = async (lookup: Parameters<typeof client.jobStatus>[0]) =>
    until(async () => {
      const status = await client.jobStatus(lookup);
      return status.state === 'final' && status.isFinal ? status : undefined;
    });

  before(async () => {
    receiver = await callbackReceiver();
    simulator = await startKycSimulator({
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      processingMs: 50,
      reviewMs: 150,
      callbackDelayMs: 20,
      callbackAllowList: ['https://', 'http://127.0.0.1:'],
    });
    client = createKycProviderClient({
      baseUrl: simulator.url,
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      ca: simulator.certificate,
      uploadHosts: ['localhost'],
    });
  });
  after(async () => {
    await simulator.close();
    receiver.server.close();
  });
  beforeEach(async () => {
    await control('/reset', 'POST');
    receiver.received.length = 0;
  });

  const submit = (
    apiVersion: 'v2' | 'v3',
    jobId: string,
    idNumber = '12345670',
    extra: { liveness?: number; back?: boolean; on?: ReturnType<typeof createKycProviderClient> } = {},
  ) =>
    (extra.on ?? client).submitDocumentVerification({
      apiVersion,
      jobId,
      userId: `user-${jobId}`,
      country: 'KE',
      idType: 'NATIONAL_ID',
      idNumber,
      applicant: { name: 'Amina Wanjiru Otieno', email: 'amina@example.test', phone: '+254712345678' },
      consent: {
        granted: true,
        grantedAt: new Date(),
        noticeLanguage: 'EN',
        privacyPolicyUrl: 'https://lender.example/privacy',
      },
      callbackUrl: receiver.url,
      images: {
        selfie: JPEG,
        documentFront: JPEG,
        documentBack: extra.back ? JPEG : undefined,
        livenessImages: Array.from({ length: extra.liveness ?? (apiVersion === 'v3' ? 6 : 0) }, () => JPEG),
      },
    });
  /** v3 decides by the user (EDV carries no ID number); v2 by the ID number's last digit. */
  const outcome = (jobId: string, name: string) => control(`/outcomes/user-${jobId}`, 'PUT', { outcome: name });

  for (const apiVersion of ['v2', 'v3'] as const) {
    it(`${apiVersion}: enhanced document verification is submitted, processed, looked up and called back with a valid signature`, async () => {
      const jobId = `job-${apiVersion}-approve`;
      const { providerJobId } = await submit(apiVersion, jobId, '12345670', { liveness: 6, back: true });
      assert.match(providerJobId, apiVersion === 'v2' ? /^\d{10}$/ : /^job_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
      const [job] = simulator.jobs();
      const { received } = job!;
      assert.deepEqual(
        [received.country, received.idType, received.selfie, received.documentFront, received.documentBack],
        ['KE', 'NATIONAL_ID', true, true, true],
      );
      assert.equal(received.livenessImages, 6);
      assert.equal(received.idNumber, apiVersion === 'v2' ? '12345670' : undefined, 'v3 EDV reads the document');
      if (apiVersion === 'v2') assert.deepEqual(job!.received.imageForms, ['file'], 'images packed as zip files');
      else
        assert.deepEqual(job!.received.userDetails, {
          given_names: 'Amina Wanjiru',
          last_name: 'Otieno',
          email: 'amina@example.test',
          phone_number: '+254712345678',
        });
      const lookup = { apiVersion, jobId, userId: `user-${jobId}`, providerJobId };
      assert.deepEqual(await client.jobStatus(lookup), { state: 'processing' });
      const callback = await until(() => callbacksFor(jobId)[0]);
      assert.ok(callback.parsed, 'the callback signature verifies');
      assert.equal(callback.parsed.jobId, jobId);
      if (apiVersion === 'v3') assert.equal(callback.parsed.providerJobId, providerJobId);
      const status = await finalStatus(lookup);
      assert.equal(status.category, 'APPROVED');
      assert.equal(status.resultCode, apiVersion === 'v2' ? '0810' : 'clear');
      assert.equal(status.userId, `user-${jobId}`);
    });

    it(`${apiVersion}: outcomes map to categories: no match and spoof are rejected, an error is an error`, async () => {
      for (const [digit, name, category] of [
        ['1', 'reject', 'REJECTED'],
        ['3', 'spoof', 'REJECTED'],
        ['9', 'error', 'ERROR'],
      ] as const) {
        const jobId = `job-${apiVersion}-${digit}`;
        await outcome(jobId, name);
        const { providerJobId } = await submit(apiVersion, jobId, `1234567${digit}`);
        const status = await finalStatus({ apiVersion, jobId, userId: `user-${jobId}`, providerJobId });
        assert.equal(status.category, category, digit);
      }
    });

    it(`${apiVersion}: human review shows a provisional result (attention), then the final one`, async () => {
      const jobId = `job-${apiVersion}-review`;
      await outcome(jobId, 'review_approve');
      const { providerJobId } = await submit(apiVersion, jobId, '12345674');
      const lookup = { apiVersion, jobId, userId: `user-${jobId}`, providerJobId };
      const provisional = await until(async () => {
        const status = await client.jobStatus(lookup);
        return status.state === 'final' ? status : undefined;
      });
      assert.equal(provisional.category, 'PROVISIONAL');
      assert.equal(provisional.isFinal, false);
      if (apiVersion === 'v3') assert.equal(provisional.resultCode, 'attention');
      const final = await finalStatus(lookup);
      assert.equal(final.category, 'APPROVED');
      const [first, second] = await until(() => {
        const parsed = callbacksFor(jobId).map((c) => c.parsed!);
        return parsed.length >= 2 && parsed;
      });
      assert.notEqual(first!.eventId, second!.eventId);
    });

    it(`${apiVersion}: forged and stale callbacks do not verify; a duplicate carries the same event id`, async () => {
      await control('/', 'PATCH', { holdJobs: true });
      const jobId = `job-${apiVersion}-modes`;
      const { providerJobId } = await submit(apiVersion, jobId);
      await control(`/jobs/${providerJobId}/release`, 'POST');
      await until(() => callbacksFor(jobId).length >= 1);
      for (const mode of ['forge', 'stale', 'duplicate'])
        await control(`/jobs/${providerJobId}/callback`, 'POST', { mode });
      const parsed = callbacksFor(jobId).map((c) => c.parsed);
      assert.equal(parsed.length, 5);
      assert.ok(parsed[0]);
      assert.equal(parsed[1], undefined, 'forged');
      assert.equal(parsed[2], undefined, 'stale');
      assert.deepEqual([parsed[3]!.eventId, parsed[4]!.eventId], [parsed[0]!.eventId, parsed[0]!.eventId]);
    });

    it(`${apiVersion}: a lost callback is recovered by the status lookup; a forgotten job is not_found`, async () => {
      await control('/', 'PATCH', { callbacks: 'lose' });
      const jobId = `job-${apiVersion}-lost`;
      const { providerJobId } = await submit(apiVersion, jobId);
      const lookup = { apiVersion, jobId, userId: `user-${jobId}`, providerJobId };
      const final = await finalStatus(lookup);
      assert.equal(final.category, 'APPROVED');
      assert.equal(callbacksFor(jobId).length, 0, 'no callback arrived');
      await control(`/jobs/${providerJobId}`, 'DELETE');
      assert.deepEqual(await client.jobStatus(lookup), { state: 'not_found' });
    });

    it(`${apiVersion}: an SDK session token lets the client SDK submit straight to the provider`, async () => {
      const jobId = `job-${apiVersion}-sdk`;
      const { token } = await client.createSdkSession({
        apiVersion,
        jobId,
        userId: `user-${jobId}`,
        callbackUrl: receiver.url,
      });
      assert.ok(token.length > 20);
      const submitted = (await (await control('/sdk/submit', 'POST', { token, id_number: '5550' })).json()) as {
        job_id: string;
      };
      if (apiVersion === 'v3') assert.match(submitted.job_id, /^job_/);
      const callback = await until(() => callbacksFor(jobId)[0]?.parsed);
      assert.equal(callback.jobId, jobId);
    });
  }

  it('v2: a job id that exists is refused with 2215, so a retry never makes a second job', async () => {
    await submit('v2', 'job-reused');
    await until(() => simulator.jobs()[0]?.state !== 'awaiting_upload');
    await assert.rejects(
      submit('v2', 'job-reused'),
      (error: unknown) => error instanceof KycProviderError && error.status === 400 && /2215/.test(error.message),
    );
    assert.equal(simulator.jobs().length, 1, 'the first job is kept');
  });

  it('v2: the zip goes to the presigned storage URL, which refuses a tampered signature, another content type or a lost upload id', async () => {
    const signed = (await client.jobStatus({ apiVersion: 'v2', jobId: 'x', userId: 'y' })) as JobStatus;
    assert.deepEqual(signed, { state: 'not_found' });
    // Prepare an upload by hand to hold its URL.
    const timestamp = new Date().toISOString();
    const prepared = await fetch(`${simulator.url}/v1/upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        signature: signV2(API_KEY, PARTNER_ID, timestamp),
        timestamp,
        smile_client_id: PARTNER_ID,
        partner_params: { job_id: 'job-presigned', user_id: 'user-presigned', job_type: 11 },
        file_name: 'selfie.zip',
        callback_url: receiver.url,
        country: 'KE',
        id_type: 'NATIONAL_ID',
      }),
    });
    const answer = (await prepared.json()) as { upload_url: string; code: string };
    assert.equal(answer.code, '2202');
    const url = new URL(answer.upload_url);
    assert.equal(url.protocol, 'https:');
    assert.notEqual(url.host, new URL(simulator.url).host, 'the storage is another host');
    const put = (target: string, type: string) =>
      new Promise<number>((resolve, reject) => {
        const req = https.request(
          target,
          { method: 'PUT', headers: { 'content-type': type }, ca: simulator.certificate },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.end('zip');
      });
    const tampered = new URL(url);
    tampered.searchParams.set('Signature', 'AAAA');
    assert.equal(await put(tampered.href, 'application/zip'), 403);
    assert.equal(await put(url.href, 'application/octet-stream'), 403);
    const otherKey = new URL(url);
    otherKey.pathname = otherKey.pathname.replace(
      /\/[^/]+\/selfie\.zip$/,
      '/00000000-0000-0000-0000-000000000000/selfie.zip',
    );
    assert.equal(await put(otherKey.href, 'application/zip'), 403);
    assert.equal(await put(url.href, 'application/zip'), 200, 'the signed PUT is taken');
  });

  it('v3: the TLS listener serves the same API with the published certificate', async () => {
    const secure = createKycProviderClient({
      baseUrl: simulator.tlsUrl,
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      ca: simulator.certificate,
    });
    const { providerJobId } = await submit('v3', 'job-tls', '12345670', { on: secure });
    const status = await until(async () => {
      const answer = await secure.jobStatus({
        apiVersion: 'v3',
        jobId: 'job-tls',
        userId: 'user-job-tls',
        providerJobId,
      });
      return answer.state === 'final' ? answer : undefined;
    });
    assert.equal(status.state === 'final' && status.category, 'APPROVED');
    const untrusting = createKycProviderClient({ baseUrl: simulator.tlsUrl, partnerId: PARTNER_ID, apiKey: API_KEY });
    await assert.rejects(
      untrusting.jobStatus({ apiVersion: 'v3', jobId: 'x', userId: 'y', providerJobId }),
      /unreachable/,
    );
  });

  it('v3: EDV refuses fewer than 6 liveness frames, and a v3 body that is not multipart (415)', async () => {
    await assert.rejects(
      submit('v3', 'job-few-frames', '12345670', { liveness: 3 }),
      (error: unknown) =>
        error instanceof KycProviderError && error.status === 400 && /liveness_images/.test(error.message),
    );
    const token = (await (
      await fetch(`${simulator.url}/v3/token`, {
        method: 'POST',
        headers: { 'smileid-partner-id': PARTNER_ID, 'smileid-api-key': API_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'u' }),
      })
    ).status) as number;
    assert.equal(token, 415);
  });

  it('v3: replay sends a lost callback again once the job is final, and refuses before', async () => {
    await control('/', 'PATCH', { holdJobs: true, callbacks: 'lose' });
    const { providerJobId } = await submit('v3', 'job-replay');
    assert.equal(await client.replayCallback(providerJobId), 'not_final');
    await control(`/jobs/${providerJobId}/release`, 'POST');
    await until(() => simulator.jobs()[0]?.state === 'final');
    assert.equal(await client.replayCallback(providerJobId), 'accepted');
    const callback = await until(() => callbacksFor('job-replay')[0]?.parsed);
    assert.equal(callback.providerJobId, providerJobId);
  });

  it('wrong credentials are refused as the provider does (401), retryably: credentials can be fixed while runs wait', async () => {
    const wrong = createKycProviderClient({ baseUrl: simulator.url, partnerId: PARTNER_ID, apiKey: 'wrong' });
    for (const apiVersion of ['v2', 'v3'] as const) {
      await assert.rejects(
        wrong.jobStatus({ apiVersion, jobId: 'x', userId: 'y', providerJobId: 'job_01h455vb4pex5vsknk084sn02q' }),
        (error: unknown) => error instanceof KycProviderError && error.status === 401 && error.retryable,
      );
    }
  });

  it('v3: a token the provider revoked is dropped and a fresh one taken, once', async () => {
    const { providerJobId } = await submit('v3', 'job-revoked');
    await control('/revoke-tokens', 'POST');
    const status = await client.jobStatus({
      apiVersion: 'v3',
      jobId: 'job-revoked',
      userId: 'user-job-revoked',
      providerJobId,
    });
    assert.ok(status.state === 'processing' || status.state === 'final');
  });

  it('v2: the zip goes only to an https upload URL on the provider’s storage hosts', async () => {
    const strict = createKycProviderClient({
      baseUrl: simulator.url,
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      ca: simulator.certificate,
      uploadHosts: ['storage.provider.example'],
    });
    await assert.rejects(
      submit('v2', 'job-elsewhere', '12345670', { on: strict }),
      (error: unknown) =>
        error instanceof KycProviderError && !error.retryable && /not the provider's storage/.test(error.message),
    );
    const loose = createKycProviderClient({
      baseUrl: simulator.url,
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      ca: simulator.certificate,
    });
    await assert.rejects(
      submit('v2', 'job-local', '12345670', { on: loose }),
      /not the provider's storage/,
      'localhost only when listed',
    );
  });

  it('a failing provider gives retryable errors; an unreachable one too', async () => {
    await control('/', 'PATCH', { failWith: 503 });
    await assert.rejects(
      submit('v2', 'job-fail'),
      (error: unknown) => error instanceof KycProviderError && error.retryable && error.status === 503,
    );
    const nowhere = createKycProviderClient({
      baseUrl: 'http://127.0.0.1:1',
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      timeoutMs: 500,
    });
    await assert.rejects(
      nowhere.jobStatus({ apiVersion: 'v2', jobId: 'x', userId: 'y' }),
      (error: unknown) => error instanceof KycProviderError && error.retryable,
    );
  });

  it('v2 requests signed with a stale timestamp are refused by the provider', async () => {
    const skewed = createKycProviderClient({
      baseUrl: simulator.url,
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      clock: () => new Date(Date.now() + 3_600_000),
    });
    await submit('v2', 'job-clock');
    await assert.rejects(
      skewed.jobStatus({ apiVersion: 'v2', jobId: 'job-clock', userId: 'user-job-clock' }),
      (error: unknown) => error instanceof KycProviderError && error.status === 401,
    );
  });

  it('v2 status answers are believed only when their signature verifies', async () => {
    await submit('v2', 'job-forged-status');
    await control('/', 'PATCH', { forgeStatusSignature: true });
    await assert.rejects(
      client.jobStatus({ apiVersion: 'v2', jobId: 'job-forged-status', userId: 'user-job-forged-status' }),
      /bad response signature/,
    );
  });

  it('callbacks with a body that is not JSON, or no signature, are refused', () => {
    assert.equal(client.parseCallback('v2', {}, 'not json'), undefined);
    assert.equal(client.parseCallback('v3', { 'response-timestamp': new Date().toISOString() }, '{}'), undefined);
  });
});

import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { categoryOf } from '../../domain/kyc/result-codes';
import { createKycProviderClient, KycProviderError, type ProviderCallback } from '../../providers/kyc/client';
import { type RunningKycSimulator, startKycSimulator } from '../../providers/kyc/simulator';

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

async function until<T>(check: () => T | undefined | false, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
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
        parsed: client.parseCallback(r.headers['smileid-timestamp'] ? 'v3' : 'v2', r.headers, r.body),
      }))
      .filter((c) => c.raw.body.includes(job));

  before(async () => {
    simulator = await startKycSimulator({
      partnerId: PARTNER_ID,
      apiKey: API_KEY,
      processingMs: 50,
      reviewMs: 150,
      callbackDelayMs: 20,
    });
    receiver = await callbackReceiver();
    client = createKycProviderClient({ baseUrl: simulator.url, partnerId: PARTNER_ID, apiKey: API_KEY });
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
    extra: { liveness?: number; back?: boolean } = {},
  ) =>
    client.submitDocumentVerification({
      apiVersion,
      jobId,
      userId: `user-${jobId}`,
      country: 'KE',
      idType: 'NATIONAL_ID',
      idNumber,
      consent: true,
      callbackUrl: receiver.url,
      images: {
        selfie: JPEG,
        documentFront: JPEG,
        documentBack: extra.back ? JPEG : undefined,
        livenessImages: Array.from({ length: extra.liveness ?? 0 }, () => JPEG),
      },
    });

  for (const apiVersion of ['v2', 'v3'] as const) {
    it(`${apiVersion}: enhanced document verification is submitted, processed, looked up and called back with a valid signature`, async () => {
      const jobId = `job-${apiVersion}-approve`;
      const { providerJobId } = await submit(apiVersion, jobId, '12345670', { liveness: 3, back: true });
      assert.match(providerJobId, apiVersion === 'v2' ? /^\d{10}$/ : /^job_[0-9A-Z]{26}$/);
      const [job] = simulator.jobs();
      assert.deepEqual(
        { ...job!.received },
        {
          country: 'KE',
          idType: 'NATIONAL_ID',
          idNumber: '12345670',
          consent: true,
          selfie: true,
          documentFront: true,
          documentBack: true,
          livenessImages: 3,
        },
      );
      const lookup = { apiVersion, jobId, userId: `user-${jobId}`, providerJobId };
      assert.deepEqual(await client.jobStatus(lookup), { state: 'processing' });
      const callback = await until(() => callbacksFor(jobId)[0]);
      assert.ok(callback.parsed, 'the callback signature verifies');
      assert.equal(callback.parsed.resultCode, '0810');
      assert.equal(callback.parsed.isFinal, true);
      assert.equal(callback.parsed.jobId, jobId);
      const status = await client.jobStatus(lookup);
      assert.equal(status.state, 'final');
      assert.equal(status.state === 'final' && categoryOf(status.resultCode), 'APPROVED');
    });

    it(`${apiVersion}: outcomes follow the ID number: no match, spoof, error`, async () => {
      for (const [digit, category] of [
        ['1', 'REJECTED'],
        ['3', 'REJECTED'],
        ['9', 'ERROR'],
      ] as const) {
        const jobId = `job-${apiVersion}-${digit}`;
        await submit(apiVersion, jobId, `1234567${digit}`);
        const callback = await until(() => callbacksFor(jobId)[0]?.parsed);
        assert.equal(categoryOf(callback.resultCode), category, digit);
      }
    });

    it(`${apiVersion}: human review sends a provisional result, then the final one`, async () => {
      const jobId = `job-${apiVersion}-review`;
      await submit(apiVersion, jobId, '12345674');
      const [provisional, final] = await until(() => {
        const parsed = callbacksFor(jobId).map((c) => c.parsed!);
        return parsed.length >= 2 && parsed;
      });
      assert.equal(categoryOf(provisional!.resultCode), 'PROVISIONAL');
      assert.equal(provisional!.isFinal, false);
      assert.equal(categoryOf(final!.resultCode), 'APPROVED');
      assert.equal(final!.isFinal, true);
      assert.notEqual(provisional!.eventId, final!.eventId);
    });

    it(`${apiVersion}: forged and stale callbacks do not verify; a duplicate carries the same event id`, async () => {
      await control('/', 'PATCH', { holdJobs: true });
      const jobId = `job-${apiVersion}-modes`;
      const { providerJobId } = await submit(apiVersion, jobId);
      const smileJobId = simulator.jobs()[0]!.smileJobId;
      await control(`/jobs/${smileJobId}/release`, 'POST');
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
      let final;
      for (let i = 0; i < 50 && !final; i++) {
        const answer = await client.jobStatus(lookup);
        if (answer.state === 'final') final = answer;
        else await new Promise((resolve) => setTimeout(resolve, 30));
      }
      assert.equal(final?.resultCode, '0810');
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
      assert.equal(callback.resultCode, '0810');
    });
  }

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

  it('wrong credentials are refused as the provider does, and are not retryable', async () => {
    const wrong = createKycProviderClient({ baseUrl: simulator.url, partnerId: PARTNER_ID, apiKey: 'wrong' });
    for (const apiVersion of ['v2', 'v3'] as const) {
      await assert.rejects(
        wrong.jobStatus({ apiVersion, jobId: 'x', userId: 'y', providerJobId: 'job_X' }),
        (error: unknown) => error instanceof KycProviderError && error.status === 401 && !error.retryable,
      );
    }
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

  it('callbacks with a body that is not JSON are refused', () => {
    assert.equal(client.parseCallback('v2', {}, 'not json'), undefined);
    const parsed: ProviderCallback | undefined = client.parseCallback(
      'v3',
      { 'smileid-timestamp': String(Math.floor(Date.now() / 1000)) },
      '{}',
    );
    assert.equal(parsed, undefined);
  });
});

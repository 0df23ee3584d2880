import { randomBytes, randomUUID } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import { strFromU8, unzipSync } from 'fflate';
import { jwtVerify, SignJWT } from 'jose';
import type { Context } from 'koa';
import { controlRouter, SimulatorTimers, startSimulatorServer } from '../simulator-server';
import { signV2, signV3Callback, verifyV2 } from './signature';

/**
 * Simulator of the identity-verification provider (protocols/kyc-provider.md), both API
 * generations, for development and tests. It checks signatures and tokens as the provider does,
 * decides outcomes from the input, and sends signed callbacks after a delay. A control API
 * under /_control lets tests lose, duplicate, delay or forge callbacks, hold jobs, make the API
 * fail, forget jobs, and read what was received.
 *
 * Outcome by the last digit of the ID number (or a per-user override set through the control
 * API): 1 no match (1022), 2 not found (1023), 3 possible spoof (0907), 4 human review then
 * approved, 5 human review then rejected, 9 error (2213), anything else approved (0810).
 * v2 answers an unknown job with 404 {code: "2204"} (*assumed*: no public source shows it).
 */
export type Outcome = 'approve' | 'reject' | 'not_found' | 'spoof' | 'review_approve' | 'review_reject' | 'error';
export type CallbackMode = 'normal' | 'lose' | 'duplicate' | 'forge' | 'stale';

const RESULTS: Record<Outcome, { code: string; text: string; provisional?: { code: string; text: string } }> = {
  approve: { code: '0810', text: 'Document Verified' },
  reject: { code: '1022', text: 'No Match' },
  not_found: { code: '1023', text: 'ID Number Not Found' },
  spoof: { code: '0907', text: 'Possible Spoof' },
  review_approve: {
    code: '0810',
    text: 'Document Verified',
    provisional: { code: '0814', text: 'Under Human Review' },
  },
  review_reject: { code: '1022', text: 'No Match', provisional: { code: '0814', text: 'Under Human Review' } },
  error: { code: '2213', text: 'Missing Parameter' },
};
const BY_LAST_DIGIT: Record<string, Outcome> = {
  '1': 'reject',
  '2': 'not_found',
  '3': 'spoof',
  '4': 'review_approve',
  '5': 'review_reject',
  '9': 'error',
};

export interface SimulatedJob {
  smileJobId: string;
  v3JobId: string;
  apiVersion: 'v2' | 'v3';
  jobId: string;
  userId: string;
  jobType: number;
  callbackUrl: string;
  outcome: Outcome;
  state: 'awaiting_upload' | 'processing' | 'provisional' | 'final';
  resultCode?: string;
  resultText?: string;
  held: boolean;
  received: {
    country?: string;
    idType?: string;
    idNumber?: string;
    consent?: boolean;
    selfie: boolean;
    documentFront: boolean;
    documentBack: boolean;
    livenessImages: number;
  };
  callbacksSent: number;
}

export interface KycSimulatorOptions {
  partnerId: string;
  apiKey: string;
  port?: number;
  /** Time from submission to a result, and from a provisional to the final result. */
  processingMs?: number;
  reviewMs?: number;
  /** Time from a result to its callback. */
  callbackDelayMs?: number;
}

interface Control {
  callbacks: CallbackMode;
  callbackDelayMs: number;
  processingMs: number;
  reviewMs: number;
  holdJobs: boolean;
  /** HTTP status every API endpoint answers with (0: behave normally). */
  failWith: number;
  /** Sign v2 job_status answers with a wrong key (a tampered or spoofed answer). */
  forgeStatusSignature: boolean;
  outcomes: Record<string, Outcome>;
}

export interface RunningKycSimulator {
  url: string;
  jobs(): SimulatedJob[];
  close(): Promise<void>;
}

const tenDigits = () => String(1_000_000_000 + Math.floor(Math.random() * 8_999_999_999));
const v3Id = () => `job_${randomBytes(13).toString('hex').slice(0, 26).toUpperCase()}`;

export async function startKycSimulator(options: KycSimulatorOptions): Promise<RunningKycSimulator> {
  const { partnerId, apiKey } = options;
  const tokenKey = new TextEncoder().encode(randomBytes(32).toString('hex'));
  /** Jobs by the provider's v2 id, with indexes for the v2 (our job id and user id) and v3 lookups. */
  const jobs = new Map<string, SimulatedJob>();
  const byV2Key = new Map<string, SimulatedJob>();
  const byV3Id = new Map<string, SimulatedJob>();
  const uploads = new Map<string, SimulatedJob>();
  /** SDK session tokens and the job each was minted for. */
  const sessions = new Map<string, SimulatedJob>();
  const timers = new SimulatorTimers();
  const defaults = (): Control => ({
    callbacks: 'normal',
    callbackDelayMs: options.callbackDelayMs ?? 50,
    processingMs: options.processingMs ?? 100,
    reviewMs: options.reviewMs ?? 200,
    holdJobs: false,
    failWith: 0,
    forgeStatusSignature: false,
    outcomes: {},
  });
  let control = defaults();
  let baseUrl = '';

  const later = (ms: number, work: () => unknown) => timers.later(ms, work);
  const v2Key = (jobId: unknown, userId: unknown) => `${String(jobId)}\u0000${String(userId)}`;
  const findV2 = (jobId: unknown, userId: unknown) => byV2Key.get(v2Key(jobId, userId));
  const findV3 = (id: string) => byV3Id.get(id);
  const remember = (job: SimulatedJob) => {
    jobs.set(job.smileJobId, job);
    byV2Key.set(v2Key(job.jobId, job.userId), job);
    byV3Id.set(job.v3JobId, job);
  };
  const forget = (job: SimulatedJob) => {
    jobs.delete(job.smileJobId);
    if (byV2Key.get(v2Key(job.jobId, job.userId)) === job) byV2Key.delete(v2Key(job.jobId, job.userId));
    byV3Id.delete(job.v3JobId);
  };

  function outcomeFor(userId: string, idNumber: string | undefined): Outcome {
    return control.outcomes[userId] ?? BY_LAST_DIGIT[(idNumber ?? '').slice(-1)] ?? 'approve';
  }

  function callbackBody(job: SimulatedJob, timestamp: string): string {
    const isFinal = job.state === 'final';
    if (job.apiVersion === 'v3') {
      return JSON.stringify({
        job_id: job.v3JobId,
        user_id: job.userId,
        partner_params: { job_id: job.jobId, user_id: job.userId, job_type: job.jobType },
        result: { ResultCode: job.resultCode, ResultText: job.resultText, IsFinalResult: String(isFinal) },
        created_at: timestamp,
      });
    }
    return JSON.stringify({
      ResultCode: job.resultCode,
      ResultText: job.resultText,
      ResultType: 'ID Verification',
      SmileJobID: job.smileJobId,
      PartnerParams: { job_id: job.jobId, user_id: job.userId, job_type: String(job.jobType) },
      Actions: { Verify_Document: job.resultCode === '0810' ? 'Passed' : 'Failed' },
      IsFinalResult: String(isFinal),
      timestamp,
      signature: signV2(apiKey, partnerId, timestamp),
    });
  }

  /** Sends the job's current result to its callback URL as the mode says. */
  async function sendCallback(job: SimulatedJob, mode: CallbackMode = control.callbacks): Promise<void> {
    if (mode === 'lose') return;
    const at = mode === 'stale' ? new Date(Date.now() - 60 * 60_000) : new Date();
    const timestamp = job.apiVersion === 'v3' ? String(Math.floor(at.getTime() / 1000)) : at.toISOString();
    let body = callbackBody(job, timestamp);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (job.apiVersion === 'v3') {
      headers['SmileID-Timestamp'] = timestamp;
      headers['SmileID-Request-Signature'] =
        mode === 'forge' ? signV3Callback('wrong-key', timestamp, body) : signV3Callback(apiKey, timestamp, body);
    } else if (mode === 'forge') {
      body = JSON.stringify({ ...JSON.parse(body), signature: signV2('wrong-key', partnerId, timestamp) });
    }
    for (let i = 0; i < (mode === 'duplicate' ? 2 : 1); i++) {
      job.callbacksSent += 1;
      await fetch(job.callbackUrl, { method: 'POST', headers, body, signal: AbortSignal.timeout(5_000) }).catch(
        () => {},
      );
    }
  }

  /** Processing → (provisional →) final, with a callback at each result. */
  function process(job: SimulatedJob) {
    job.state = 'processing';
    if (job.held) return;
    later(control.processingMs, () => complete(job));
  }
  function complete(job: SimulatedJob) {
    const result = RESULTS[job.outcome];
    if (result.provisional && job.state === 'processing') {
      job.state = 'provisional';
      job.resultCode = result.provisional.code;
      job.resultText = result.provisional.text;
      later(control.callbackDelayMs, () => sendCallback(job));
      later(control.reviewMs, () => complete(job));
      return;
    }
    job.state = 'final';
    job.resultCode = result.code;
    job.resultText = result.text;
    later(control.callbackDelayMs, () => sendCallback(job));
  }

  function newJob(
    apiVersion: 'v2' | 'v3',
    params: { job_id?: unknown; user_id?: unknown; job_type?: unknown },
    callbackUrl: string,
  ): SimulatedJob {
    const job: SimulatedJob = {
      smileJobId: tenDigits(),
      v3JobId: v3Id(),
      apiVersion,
      jobId: String(params.job_id ?? randomUUID()),
      userId: String(params.user_id ?? ''),
      jobType: Number(params.job_type ?? 11),
      callbackUrl,
      outcome: 'approve',
      state: 'awaiting_upload',
      held: control.holdJobs,
      received: { selfie: false, documentFront: false, documentBack: false, livenessImages: 0 },
      callbacksSent: 0,
    };
    remember(job);
    return job;
  }

  const refuse = (ctx: Context, status: number, code: string, error: string) => {
    ctx.status = status;
    ctx.body = { code, error };
  };
  const v2Authorized = (ctx: Context) => {
    const body = ctx.request.body as Record<string, unknown>;
    const claimed = body.partner_id ?? body.smile_client_id;
    if (claimed !== partnerId || !verifyV2(apiKey, partnerId, body, new Date())) {
      refuse(ctx, 401, '2205', 'You are not authorized to do that.');
      return false;
    }
    return true;
  };
  const v3Authorized = async (ctx: Context) => {
    try {
      await jwtVerify(ctx.get('SmileID-Token'), tokenKey, { issuer: 'simulator', audience: partnerId });
      return true;
    } catch {
      refuse(ctx, 401, '2205', 'Invalid or expired token');
      return false;
    }
  };
  const mintToken = (claims: Record<string, unknown> = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('simulator')
      .setAudience(partnerId)
      .setIssuedAt()
      .setExpirationTime('15m')
      .sign(tokenKey);

  const api = new Router();
  api.post('/v1/upload', (ctx) => {
    if (!v2Authorized(ctx)) return;
    const body = ctx.request.body as { partner_params?: Record<string, unknown>; callback_url?: string };
    if (!body.partner_params?.job_id || !body.partner_params.user_id)
      return refuse(ctx, 400, '2213', 'Missing parameter: partner_params');
    const job = newJob('v2', body.partner_params, String(body.callback_url ?? ''));
    const uploadId = randomUUID();
    uploads.set(uploadId, job);
    ctx.body = { upload_url: `${baseUrl}/_uploads/${uploadId}`, smile_job_id: job.smileJobId, ref_id: uploadId };
  });
  api.put('/_uploads/:id', async (ctx) => {
    const job = uploads.get(ctx.params.id!);
    if (!job) return refuse(ctx, 404, '2204', 'Upload not found');
    uploads.delete(ctx.params.id!);
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    let info: {
      id_info?: Record<string, string>;
      images?: { image_type_id: number }[];
      consent_information?: { consented?: Record<string, boolean> };
    };
    try {
      info = JSON.parse(strFromU8(unzipSync(new Uint8Array(Buffer.concat(chunks)))['info.json']!));
    } catch {
      return refuse(ctx, 400, '2213', 'Missing parameter: info.json');
    }
    const types = (info.images ?? []).map((i) => i.image_type_id);
    job.received = {
      country: info.id_info?.country,
      idType: info.id_info?.id_type,
      idNumber: info.id_info?.id_number,
      consent: info.consent_information?.consented?.document_information === true,
      selfie: types.includes(2),
      documentFront: types.includes(3),
      documentBack: types.includes(7),
      livenessImages: types.filter((t) => t === 6).length,
    };
    if (!job.received.selfie || !job.received.documentFront)
      return refuse(ctx, 400, '2213', 'Missing parameter: images');
    job.outcome = outcomeFor(job.userId, job.received.idNumber);
    process(job);
    ctx.status = 200;
  });
  api.post('/v1/token', (ctx) => {
    if (!v2Authorized(ctx)) return;
    const body = ctx.request.body as { job_id?: string; user_id?: string; callback_url?: string };
    return mintToken({ job_id: body.job_id, user_id: body.user_id }).then((token) => {
      // The client SDK submits straight to the provider with this token (/_control/sdk/submit).
      sessions.set(
        token,
        newJob('v2', { job_id: body.job_id, user_id: body.user_id }, String(body.callback_url ?? '')),
      );
      ctx.body = { token };
    });
  });
  api.post('/v1/job_status', (ctx) => {
    if (!v2Authorized(ctx)) return;
    const body = ctx.request.body as { job_id?: string; user_id?: string };
    const job = findV2(body.job_id, body.user_id);
    if (!job || job.state === 'awaiting_upload') return refuse(ctx, 404, '2204', 'Job not found');
    const timestamp = new Date().toISOString();
    const complete = job.state === 'final' || job.state === 'provisional';
    ctx.body = {
      timestamp,
      signature: signV2(control.forgeStatusSignature ? 'wrong-key' : apiKey, partnerId, timestamp),
      job_complete: complete,
      job_success: complete && job.resultCode === '0810',
      code: complete ? '2302' : '2314',
      result: complete
        ? {
            ResultCode: job.resultCode,
            ResultText: job.resultText,
            SmileJobID: job.smileJobId,
            IsFinalResult: String(job.state === 'final'),
          }
        : 'Job is not complete',
      history: [],
    };
  });
  api.post('/v3/token', async (ctx) => {
    if (ctx.get('smileid-partner-id') !== partnerId || ctx.get('smileid-api-key') !== apiKey)
      return refuse(ctx, 401, '2205', 'Invalid partner credentials');
    const body = (ctx.request.body ?? {}) as {
      product?: string;
      user_id?: string;
      partner_params?: Record<string, unknown>;
      callback_url?: string;
    };
    if (body.product) {
      const job = newJob(
        'v3',
        { ...body.partner_params, user_id: body.user_id ?? body.partner_params?.user_id },
        String(body.callback_url ?? ''),
      );
      const token = await mintToken({ product: body.product, user_id: body.user_id });
      sessions.set(token, job);
      ctx.body = { token };
      return;
    }
    ctx.body = { token: await mintToken() };
  });
  api.post('/v3/enhanced_document_verification', async (ctx) => {
    if (!(await v3Authorized(ctx))) return;
    const form = await new Request('http://simulator', {
      method: 'POST',
      headers: { 'content-type': ctx.get('content-type') },
      body: ctx.req as unknown as ReadableStream,
      duplex: 'half',
    } as RequestInit).formData();
    const params = JSON.parse(String(form.get('partner_params') ?? '{}')) as Record<string, unknown>;
    const details = JSON.parse(String(form.get('user_details') ?? '{}')) as { id_number?: string };
    if (!form.get('selfie_image') || !form.get('document') || !form.get('country') || !form.get('id_type')) {
      return refuse(ctx, 400, '2213', 'Missing parameter');
    }
    const job = newJob('v3', params, String(form.get('callback_url') ?? ''));
    job.received = {
      country: String(form.get('country')),
      idType: String(form.get('id_type')),
      idNumber: details.id_number,
      consent: form.get('consent') === 'true',
      selfie: true,
      documentFront: true,
      documentBack: form.get('document_back') !== null,
      livenessImages: form.getAll('liveness_images').length,
    };
    job.outcome = outcomeFor(job.userId, details.id_number);
    process(job);
    ctx.status = 202;
    ctx.body = { status: 'Accepted', job_id: job.v3JobId, user_id: job.userId, created_at: new Date().toISOString() };
  });
  api.get('/v3/status/:jobId', async (ctx) => {
    if (!(await v3Authorized(ctx))) return;
    const job = findV3(ctx.params.jobId!);
    if (!job || job.state === 'awaiting_upload') {
      ctx.status = 404;
      ctx.body = { status: 'not_found' };
    } else if (job.state === 'processing') {
      ctx.status = 202;
      ctx.body = { status: 'processing' };
    } else {
      const status =
        job.resultCode === '0810'
          ? 'clear'
          : job.state === 'provisional'
            ? 'attention'
            : job.resultCode?.startsWith('2')
              ? 'error'
              : 'block';
      ctx.body = {
        status,
        job_id: job.v3JobId,
        result: {
          ResultCode: job.resultCode,
          ResultText: job.resultText,
          IsFinalResult: String(job.state === 'final'),
        },
      };
    }
  });
  api.post('/v3/replay/:jobId', async (ctx) => {
    if (!(await v3Authorized(ctx))) return;
    const job = findV3(ctx.params.jobId!);
    if (!job) return refuse(ctx, 404, '2204', 'Job not found');
    if (job.state !== 'final') return refuse(ctx, 409, '2314', 'Job is not complete');
    later(control.callbackDelayMs, () => sendCallback(job, 'normal'));
    ctx.status = 202;
    ctx.body = { status: 'Accepted' };
  });

  const controlApi = controlRouter();
  controlApi.post('/reset', (ctx) => {
    timers.clear();
    jobs.clear();
    byV2Key.clear();
    byV3Id.clear();
    uploads.clear();
    sessions.clear();
    control = defaults();
    ctx.status = 204;
  });
  controlApi.patch('/', (ctx) => {
    control = { ...control, ...(ctx.request.body as Partial<Control>) };
    ctx.body = control;
  });
  controlApi.put('/outcomes/:userId', (ctx) => {
    control.outcomes[ctx.params.userId!] = (ctx.request.body as { outcome: Outcome }).outcome;
    ctx.status = 204;
  });
  /** What a client SDK does with a session token: submits, and learns the provider's job id. */
  controlApi.post('/sdk/submit', (ctx) => {
    const {
      token,
      id_number: idNumber,
      liveness_images: liveness = 0,
    } = ctx.request.body as { token: string; id_number?: string; liveness_images?: number };
    const job = sessions.get(token);
    if (!job || job.state !== 'awaiting_upload') return refuse(ctx, 401, '2205', 'Invalid or used session token');
    sessions.delete(token);
    job.received = {
      idNumber,
      selfie: true,
      documentFront: true,
      documentBack: false,
      livenessImages: liveness,
      consent: true,
    };
    job.outcome = outcomeFor(job.userId, idNumber);
    process(job);
    ctx.body = { smile_job_id: job.smileJobId, job_id: job.apiVersion === 'v3' ? job.v3JobId : job.jobId };
  });
  /**
   * Jobs as if submitted earlier, in bulk and without callbacks (benchmarks build large
   * populations this way): `processing` ones stay so until released; `final` ones carry their
   * outcome's result.
   */
  controlApi.post('/jobs', (ctx) => {
    const { jobs: wanted } = ctx.request.body as {
      jobs: {
        job_id: string;
        user_id: string;
        api_version?: 'v2' | 'v3';
        state: 'processing' | 'final';
        outcome?: Outcome;
      }[];
    };
    const created = wanted.map((w) => {
      const job = newJob(w.api_version ?? 'v2', { job_id: w.job_id, user_id: w.user_id }, '');
      job.outcome = w.outcome ?? 'approve';
      job.held = true;
      job.state = w.state;
      if (w.state === 'final') {
        job.resultCode = RESULTS[job.outcome].code;
        job.resultText = RESULTS[job.outcome].text;
      }
      return { smile_job_id: job.smileJobId, job_id: job.v3JobId };
    });
    ctx.status = 201;
    ctx.body = { created: created.length, jobs: created };
  });
  controlApi.get('/jobs', (ctx) => {
    ctx.body = [...jobs.values()];
  });
  const controlled = (ctx: Context) => jobs.get(String(ctx.params.smileJobId)) ?? findV3(String(ctx.params.smileJobId));
  controlApi.post('/jobs/:smileJobId/release', (ctx) => {
    const job = controlled(ctx);
    if (!job) return refuse(ctx, 404, '2204', 'Job not found');
    job.held = false;
    if (job.state === 'processing') later(0, () => complete(job));
    ctx.status = 204;
  });
  controlApi.post('/jobs/:smileJobId/callback', async (ctx) => {
    const job = controlled(ctx);
    if (!job) return refuse(ctx, 404, '2204', 'Job not found');
    const { mode = 'normal', delay_ms: delayMs = 0 } = (ctx.request.body ?? {}) as {
      mode?: CallbackMode;
      delay_ms?: number;
    };
    if (delayMs > 0) later(delayMs, () => sendCallback(job, mode));
    else await sendCallback(job, mode);
    ctx.status = 204;
  });
  controlApi.delete('/jobs/:smileJobId', (ctx) => {
    const job = controlled(ctx);
    if (job) forget(job);
    ctx.status = 204;
  });

  const server = await startSimulatorServer({
    port: options.port,
    timers,
    before: [
      async (ctx, next) => {
        if (control.failWith && !ctx.path.startsWith('/_control')) {
          ctx.status = control.failWith;
          ctx.body = { code: '2201', error: 'Simulated provider failure' };
          return;
        }
        await next();
      },
    ],
    // Multipart and zip bodies are read by their routes; JSON everywhere else.
    bodyParser: async (ctx, next) =>
      ctx.is('multipart/form-data') || ctx.method === 'PUT'
        ? next()
        : bodyParser({ enableTypes: ['json'], jsonLimit: '20mb' })(ctx, next),
    control: controlApi,
    api,
  });
  baseUrl = server.url;
  return {
    url: baseUrl,
    jobs: () => [...jobs.values()],
    close: () => server.close(),
  };
}

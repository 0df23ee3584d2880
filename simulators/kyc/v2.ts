import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import { strFromU8, unzipSync } from 'fflate';
import type { Context } from 'koa';
import { ASSUMED } from '../../providers/kyc/assumed';
import { signV2, verifyV2 } from '../../providers/kyc/signature';
import type { JobStore } from './jobs';
import { type Control, remember, type SimulatedJob } from './model';

/**
 * The v2 API (protocols/kyc-provider.md): JSON under /v1, every request signed in its body,
 * errors `{error, code}`. A job exists once its zip is uploaded (ASSUMED.v2JobExistsFromUpload);
 * a job id that exists is refused with 2215.
 */
export interface V2Deps {
  partnerId: string;
  apiKey: string;
  jobs: JobStore;
  control: () => Control;
  presign: (uploadId: string) => string;
  /** Uploads awaiting their zip, by upload id. */
  uploads: Map<string, SimulatedJob>;
  /** SDK session tokens and the job each was minted for. */
  sessions: Map<string, SimulatedJob>;
  mintToken: (claims: Record<string, unknown>) => Promise<string>;
}

const refuse = (ctx: Context, code: string, error: string) => {
  ctx.status = code === '2205' ? ASSUMED.v2UnauthorizedStatus : 400;
  ctx.body = { error, code };
};
const missing = (ctx: Context, name: string) => refuse(ctx, '2213', `Missing parameter: ${name}`);
const present = (value: unknown) => typeof value === 'string' && value.trim() !== '';

/** Image types in a zip: as files (named by file_name) or as base64 in `image`. */
const FILE_TYPES = new Set([0, 1, 4, 5]);
const KIND: Record<number, 'selfie' | 'front' | 'liveness' | 'back'> = {
  0: 'selfie',
  2: 'selfie',
  1: 'front',
  3: 'front',
  4: 'liveness',
  6: 'liveness',
  5: 'back',
  7: 'back',
};

/** Reads an uploaded zip into the job; an unreadable one makes the job end in error, as the provider's would. */
export function readUpload(job: SimulatedJob, zip: Buffer): void {
  let info: {
    id_info?: Record<string, unknown>;
    images?: { image_type_id?: unknown; image?: unknown; file_name?: unknown }[];
  };
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(new Uint8Array(zip));
    info = JSON.parse(strFromU8(entries['info.json']!)) as typeof info;
  } catch {
    job.received = { ...job.received };
    job.outcome = 'error';
    return;
  }
  const kinds: string[] = [];
  const forms = new Set<'file' | 'base64'>();
  for (const image of Array.isArray(info.images) ? info.images : []) {
    const type = Number(image.image_type_id);
    if (FILE_TYPES.has(type)) {
      if (typeof image.file_name !== 'string' || !entries[image.file_name]?.length) continue;
      forms.add('file');
    } else if (KIND[type]) {
      if (typeof image.image !== 'string' || image.image === '') continue;
      forms.add('base64');
    } else continue;
    kinds.push(KIND[type]!);
  }
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  job.received = {
    country: text(info.id_info?.country),
    idType: text(info.id_info?.id_type),
    idNumber: text(info.id_info?.id_number),
    selfie: kinds.includes('selfie'),
    documentFront: kinds.includes('front'),
    documentBack: kinds.includes('back'),
    livenessImages: kinds.filter((k) => k === 'liveness').length,
    imageForms: [...forms].sort(),
  };
  // Enhanced document verification reads the document against its country and type.
  if (!job.received.country || !job.received.idType) job.outcome = 'error';
}

export function v2Routes(deps: V2Deps): Router {
  const { partnerId, apiKey, jobs } = deps;
  const api = new Router({ prefix: '/v1' });

  /** The body's signature; `clientField` names where the partner id is claimed. */
  const authorized = (ctx: Context, clientField: 'partner_id' | 'smile_client_id') => {
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    if (body[clientField] !== partnerId || !verifyV2(apiKey, partnerId, body, new Date())) {
      refuse(ctx, '2205', 'You are not authorized to do that.');
      return undefined;
    }
    return body;
  };

  api.post('/upload', (ctx) => {
    const body = authorized(ctx, 'smile_client_id');
    if (!body) return;
    const params = body.partner_params as Record<string, unknown> | undefined;
    if (!params || typeof params !== 'object') return missing(ctx, 'partner_params');
    for (const key of ['job_id', 'user_id'] as const)
      if (!present(params[key])) return missing(ctx, `partner_params.${key}`);
    if (params.job_type === undefined) return missing(ctx, 'partner_params.job_type');
    // Values are strings, except job_type, an integer; nulls are refused.
    if (
      !Number.isInteger(params.job_type) ||
      Object.entries(params).some(([key, value]) => key !== 'job_type' && typeof value !== 'string')
    )
      return refuse(ctx, '2204', 'Invalid parameter type: partner_params');
    if (!present(body.file_name)) return missing(ctx, 'file_name');
    if (!present(body.callback_url)) return missing(ctx, 'callback_url');
    if (params.job_type === 11)
      for (const key of ['country', 'id_type'] as const) if (!present(body[key])) return missing(ctx, key);
    const existing = jobs.byJobId(params.job_id);
    if (existing && existing.state !== 'awaiting_upload')
      return refuse(ctx, '2215', 'Job already exists. Did you mean to set the retry flag to true?');
    if (existing) jobs.forget(existing);
    const job = jobs.create('v2', params, String(body.callback_url));
    const uploadId = randomUUID();
    remember(deps.uploads, uploadId, job);
    ctx.body = {
      upload_url: deps.presign(uploadId),
      ref_id: uploadId,
      smile_job_id: job.smileJobId,
      camera_config: null,
      code: '2202',
    };
  });

  api.post('/token', async (ctx) => {
    const body = authorized(ctx, 'partner_id');
    if (!body) return;
    for (const key of ['user_id', 'job_id', 'product', 'callback_url'] as const)
      if (!present(body[key])) return missing(ctx, key);
    const token = await deps.mintToken({ job_id: body.job_id, user_id: body.user_id, product: body.product });
    // The client SDK submits straight to the provider with this token (/_control/sdk/submit).
    remember(
      deps.sessions,
      token,
      jobs.create('v2', { job_id: body.job_id, user_id: body.user_id, job_type: 11 }, String(body.callback_url)),
    );
    ctx.body = { token };
  });

  api.post('/job_status', (ctx) => {
    const body = authorized(ctx, 'partner_id');
    if (!body) return;
    for (const key of ['user_id', 'job_id'] as const) if (!present(body[key])) return missing(ctx, key);
    const job = jobs.byJobId(body.job_id);
    if (!job || job.userId !== body.user_id || job.state === 'awaiting_upload') {
      ctx.status = ASSUMED.v2UnknownJob.status;
      ctx.body = { error: ASSUMED.v2UnknownJob.error, code: ASSUMED.v2UnknownJob.code };
      return;
    }
    const timestamp = new Date().toISOString();
    const complete = job.state === 'final' || job.state === 'provisional';
    jobs.queried(job);
    ctx.body = {
      timestamp,
      signature: signV2(deps.control().forgeStatusSignature ? 'wrong-key' : apiKey, partnerId, timestamp),
      job_complete: complete,
      job_success: complete && job.resultCode === '0810',
      code: complete ? '2302' : '2314',
      result: complete ? jobs.v2Result(job) : 'Job is not complete',
      ...(body.history === true && { history: [] }),
      ...(body.image_links === true && { image_links: {} }),
    };
  });

  return api;
}

import { STATUS_CODES } from 'node:http';
import Router from '@koa/router';
import { jwtVerify, type JWTPayload } from 'jose';
import type { Context } from 'koa';
import { ASSUMED } from '../../providers/kyc/assumed';
import type { JobStore } from './jobs';
import { type KycSimulatorOptions, remember, type SimulatedJob, V3_JOB_ID, v3Status } from './model';

/**
 * The v3 API (protocols/kyc-provider.md): a token from the partner's id and API key, then every
 * call with `SmileID-Token`; bodies multipart only (415 otherwise), object fields as form parts
 * holding JSON; errors `{status: "<HTTP status text>", message}`; TypeID job ids.
 */
export interface V3Deps {
  partnerId: string;
  apiKey: string;
  jobs: JobStore;
  /** The key tokens are signed with now (rotating it revokes every token issued). */
  tokenKey: () => Uint8Array;
  sessions: Map<string, SimulatedJob>;
  mintToken: (claims: Record<string, unknown>) => Promise<string>;
  options: Pick<KycSimulatorOptions, 'callbackAllowList' | 'defaultCallbackUrl'>;
}

/** Largest image part EDV takes (*assumed*: unpublished; 413 above it). */
const MAX_FILE_BYTES = 10 * 1024 * 1024;

const fail = (ctx: Context, status: number, message: string) => {
  ctx.status = status;
  ctx.body = { status: STATUS_CODES[status], message };
};
const invalid = (ctx: Context, field: string) => fail(ctx, 400, `Required field '${field}' is missing or invalid.`);

const isJpeg = (bytes: Uint8Array) => bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
const isPng = (bytes: Uint8Array) => bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const E164 = /^\+[1-9]\d{6,14}$/;

/** The body as a form: undefined when there is none, 'unsupported' when it is not multipart. */
async function readForm(ctx: Context): Promise<FormData | undefined | 'unsupported'> {
  const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
  if (!hasBody) return undefined;
  if (!ctx.is('multipart/form-data')) {
    ctx.req.resume();
    return 'unsupported';
  }
  return new Request('http://simulator', {
    method: 'POST',
    headers: { 'content-type': ctx.get('content-type') },
    body: ctx.req as unknown as ReadableStream,
    duplex: 'half',
  } as RequestInit).formData();
}

const jsonPart = (form: FormData, name: string): Record<string, unknown> | undefined => {
  const value = form.get(name);
  if (typeof value !== 'string') return undefined;
  try {
    const parsed = JSON.parse(value) as unknown;
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
};

/** The token's claims, or a 401 answered. */
async function authorized(deps: V3Deps, ctx: Context): Promise<(JWTPayload & { token: string }) | undefined> {
  const token = ctx.get('smileid-token');
  try {
    const { payload } = await jwtVerify(token, deps.tokenKey(), { issuer: 'simulator', audience: deps.partnerId });
    return { ...payload, token };
  } catch {
    fail(ctx, 401, 'Invalid or expired token.');
    return undefined;
  }
}

/** A callback URL the partner may use: https on the allow-list (or an allow-listed development prefix). */
function callbackUrl(deps: V3Deps, given: ReturnType<FormData['get']>): string | undefined {
  if (given === null) return deps.options.defaultCallbackUrl;
  if (typeof given !== 'string') return undefined;
  const allowList = deps.options.callbackAllowList;
  if (allowList?.some((prefix) => given.startsWith(prefix))) return given;
  if (allowList || !given.startsWith('https://')) return undefined;
  return URL.canParse(given) ? given : undefined;
}

const named = (value: unknown) => typeof value === 'string' && value.trim() !== '';

/** user_details: both names, and an e-mail or an E.164 phone number, each well-formed when given. */
const validDetails = (details: Record<string, unknown> | undefined): details is Record<string, unknown> =>
  details !== undefined &&
  named(details.given_names) &&
  named(details.last_name) &&
  (details.email !== undefined || details.phone_number !== undefined) &&
  (details.email === undefined || (typeof details.email === 'string' && /^[^@\s]+@[^@\s]+$/.test(details.email))) &&
  (details.phone_number === undefined || (typeof details.phone_number === 'string' && E164.test(details.phone_number)));

/** consent: granted, when (a minute's clock skew allowed), the notice's language and its https privacy policy. */
const validConsent = (consent: Record<string, unknown> | undefined) =>
  consent !== undefined &&
  consent.granted === true &&
  typeof consent.granted_at === 'string' &&
  ISO_DATE.test(consent.granted_at) &&
  // Not `<=`: a date the pattern passes but Date.parse cannot read (NaN) is not refused here.
  !(Date.parse(consent.granted_at) > Date.now() + 60_000) &&
  typeof consent.notice_language === 'string' &&
  /^[A-Z]{2}$/.test(consent.notice_language) &&
  typeof consent.notice_privacy_policy_url === 'string' &&
  consent.notice_privacy_policy_url.startsWith('https://');

/** POST /token: a plain token, or with a product a session token whose job the client SDK submits. */
function tokenRoute(api: Router, deps: V3Deps): void {
  const { partnerId, apiKey, jobs } = deps;
  api.post('/token', async (ctx) => {
    const claimed = ctx.get('smileid-partner-id');
    const key = ctx.get('smileid-api-key');
    if (!claimed || !key) return fail(ctx, 400, 'Missing required headers.');
    if (!/^[1-9]\d*$/.test(claimed) || claimed !== partnerId || key !== apiKey)
      return fail(ctx, 401, 'Invalid partner credentials.');
    const form = await readForm(ctx);
    if (form === 'unsupported') return fail(ctx, 415, 'Request body must be multipart/form-data.');
    if (!form) {
      ctx.body = { token: await deps.mintToken({}) };
      return;
    }
    const product = form.get('product');
    const userId = form.get('user_id');
    const params = jsonPart(form, 'partner_params') ?? {};
    const payload = jsonPart(form, 'payload') ?? {};
    const token = await deps.mintToken({ product, user_id: userId, partner_params: params, payload });
    if (typeof product === 'string' && product !== '') {
      // A session for the client SDK: its job is made now and submitted by the SDK (EDV with this token).
      const url = payload[ASSUMED.v3SessionPayloadCallbackKey];
      remember(
        deps.sessions,
        token,
        jobs.create(
          'v3',
          params,
          typeof url === 'string' ? url : (deps.options.defaultCallbackUrl ?? ''),
          typeof userId === 'string' ? userId : String(params.user_id ?? ''),
        ),
      );
    }
    ctx.body = { token };
  });
}

/** POST /enhanced_document_verification: the images and details checked, then the job starts. */
function submissionRoute(api: Router, deps: V3Deps): void {
  const { partnerId, jobs } = deps;
  api.post('/enhanced_document_verification', async (ctx) => {
    const claims = await authorized(deps, ctx);
    if (!claims) return;
    const partnerHeader = ctx.get('smileid-partner-id');
    if (!/^\d{3,}$/.test(partnerHeader)) return invalid(ctx, 'SmileID-Partner-ID');
    if (partnerHeader !== partnerId) return fail(ctx, 401, 'The partner id does not match the token.');
    // A session token is for one submission by its user.
    const session = deps.sessions.get(claims.token);
    if (typeof claims.product === 'string' && !session) return fail(ctx, 401, 'The session token has been used.');
    const header = ctx.get('user-id');
    if (typeof claims.user_id === 'string' && header && header !== claims.user_id)
      return fail(ctx, 403, 'The User-ID does not match the session token.');
    const form = await readForm(ctx);
    if (form === 'unsupported') return fail(ctx, 415, 'Request body must be multipart/form-data.');
    if (!form) return invalid(ctx, 'selfie_image');
    const files = (name: string) => form.getAll(name).filter((part) => typeof part !== 'string');
    for (const name of ['selfie_image', 'liveness_images', 'document', 'document_back'])
      if (files(name).some((file) => file.size > MAX_FILE_BYTES)) return fail(ctx, 413, `File '${name}' is too large.`);
    const bytes = async (file: Blob) => new Uint8Array(await file.arrayBuffer());
    const [selfie] = files('selfie_image');
    if (!selfie || !isJpeg(await bytes(selfie))) return invalid(ctx, 'selfie_image');
    const liveness = files('liveness_images');
    if (liveness.length < 6 || liveness.length > 8) return invalid(ctx, 'liveness_images');
    for (const frame of liveness) if (!isJpeg(await bytes(frame))) return invalid(ctx, 'liveness_images');
    const [document] = files('document');
    if (!document || !(isJpeg(await bytes(document)) || isPng(await bytes(document)))) return invalid(ctx, 'document');
    const [back] = files('document_back');
    if (form.has('document_back') && (!back || !(isJpeg(await bytes(back)) || isPng(await bytes(back)))))
      return invalid(ctx, 'document_back');
    const country = form.get('country');
    if (typeof country !== 'string' || !/^[A-Z]{2}$/.test(country)) return invalid(ctx, 'country');
    const idType = form.get('id_type');
    if (typeof idType !== 'string' || idType === '') return invalid(ctx, 'id_type');
    const details = jsonPart(form, 'user_details');
    if (!validDetails(details)) return invalid(ctx, 'user_details');
    if (!validConsent(jsonPart(form, 'consent'))) return invalid(ctx, 'consent');
    const url = callbackUrl(deps, form.get('callback_url'));
    if (!url) return invalid(ctx, 'callback_url');
    const params = form.has('partner_params') ? jsonPart(form, 'partner_params') : {};
    if (!params || Object.values(params).some((value) => typeof value !== 'string'))
      return invalid(ctx, 'partner_params');
    if (form.has('metadata') && !jsonPart(form, 'metadata')) return invalid(ctx, 'metadata');

    // A session token's job (the client SDK submitting) or a new one.
    const job =
      session?.state === 'awaiting_upload'
        ? session
        : jobs.create('v3', params, url, header || String(params.user_id ?? ''));
    deps.sessions.delete(claims.token);
    job.callbackUrl = url;
    job.received = {
      country,
      idType,
      idNumber: undefined,
      consent: true,
      selfie: true,
      documentFront: true,
      documentBack: back !== undefined,
      livenessImages: liveness.length,
      userDetails: details,
    };
    jobs.start(job);
    ctx.status = 202;
    ctx.body = {
      status: 'accepted',
      message: 'Job accepted for processing.',
      job_id: job.v3JobId,
      user_id: job.userId,
      created_at: job.createdAt,
    };
  });
}

/** GET /status/:jobId and POST /replay/:jobId: a job's state, and its final result sent again. */
function jobRoutes(api: Router, deps: V3Deps): void {
  const { jobs } = deps;
  api.get('/status/:jobId', async (ctx) => {
    if (!(await authorized(deps, ctx))) return;
    const id = ctx.params.jobId!;
    if (!V3_JOB_ID.test(id)) return fail(ctx, 400, 'Malformed job id.');
    const job = jobs.byV3Id(id);
    if (!job || job.state === 'awaiting_upload') {
      ctx.status = 404;
      ctx.body = {
        status: 'not_found',
        job_id: id,
        user_id: 'unknown',
        message: 'Job not found.',
        created_at: new Date().toISOString(),
      };
      return;
    }
    const status = v3Status(job);
    jobs.queried(job);
    ctx.status = status === 'processing' ? 202 : 200;
    ctx.body = {
      status,
      job_id: job.v3JobId,
      user_id: job.userId,
      message: job.resultText ?? 'Job is being processed.',
      created_at: job.createdAt,
    };
  });

  api.post('/replay/:jobId', async (ctx) => {
    if (!(await authorized(deps, ctx))) return;
    const form = await readForm(ctx);
    if (form === 'unsupported') return fail(ctx, 415, 'Request body must be multipart/form-data.');
    const job = jobs.byV3Id(ctx.params.jobId!);
    if (!job || job.state === 'awaiting_upload') return fail(ctx, 404, 'Job not found.');
    if (job.state !== 'final') return fail(ctx, 409, 'Job is not complete yet.');
    const given = form?.get('callback_url') ?? null;
    const url = given === null ? job.callbackUrl || deps.options.defaultCallbackUrl : callbackUrl(deps, given);
    if (!url) return fail(ctx, 400, 'No callback URL to send the result to.');
    const replayed = { ...job, callbackUrl: url };
    void jobs.sendCallback(replayed, 'normal');
    ctx.status = 202;
    ctx.body = { status: 'accepted', job_id: job.v3JobId, user_id: job.userId, message: 'Callback replay accepted.' };
  });
}

export function v3Routes(deps: V3Deps): Router {
  const api = new Router({ prefix: '/v3' });
  tokenRoute(api, deps);
  submissionRoute(api, deps);
  jobRoutes(api, deps);
  return api;
}

import { isIP } from 'node:net';
import { strToU8, zipSync } from 'fflate';
import { jsonText } from '../../domain/text';
import { categoryOf, categoryOfV3Status, type ResultCategory } from '../../domain/kyc/result-codes';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import { type HttpAnswer, httpsAgentTrusting, request } from '../http';
import { ASSUMED } from './assumed';
import { isFresh, sameSignature, signV2, verifyV2 } from './signature';

/**
 * Client of the identity-verification provider (protocols/kyc-provider.md), speaking both API
 * generations: v2 (signed JSON bodies, our job id, a zip PUT to a presigned storage URL) and v3
 * (token header, the provider's job id, multipart). Nothing here knows whether the other side
 * is the provider or our simulator; test/contracts/kyc holds the exchanges it must produce.
 */
export interface KycProviderOptions {
  baseUrl: string;
  partnerId: string;
  apiKey: string;
  timeoutMs?: number;
  clock?: () => Date;
  /** PEM of a CA to trust besides the system's (the simulator's certificate in development). */
  ca?: string;
  /**
   * Hosts a v2 `upload_url` may point at (the provider's storage); an entry starting with a dot
   * matches its subdomains. Unset: any https host that is not an IP literal or localhost.
   */
  uploadHosts?: readonly string[];
}

export interface VerificationImages {
  selfie: Buffer;
  documentFront: Buffer;
  documentBack?: Buffer;
  /** Liveness frames run the active check; a lone selfie only the passive one. */
  livenessImages?: Buffer[];
}

/** Who the applicant is, as v3 requires it (given names, last name, e-mail and/or phone). */
export interface Applicant {
  name?: string;
  email?: string;
  /** E.164. */
  phone?: string;
}

/** The applicant's consent, as v3 requires it. */
export interface Consent {
  granted: boolean;
  grantedAt: Date;
  /** Two upper-case letters. */
  noticeLanguage: string;
  privacyPolicyUrl: string;
}

export interface DocumentVerificationRequest {
  apiVersion: ProviderApiVersion;
  /** Our job id (partner_params.job_id) and the applicant's id (user_id). */
  jobId: string;
  userId: string;
  country: string;
  idType: string;
  images: VerificationImages;
  callbackUrl: string;
  applicant: Applicant;
  consent: Consent;
  idNumber?: string;
  /** A submission again after an attempt of unknown fate (v2 sends the retry flag). */
  retry?: boolean;
}

export interface SubmittedJob {
  /** v2: the provider's SmileJobID (10 digits); v3: `job_` + 26 characters. */
  providerJobId: string;
}

export type JobStatus =
  | { state: 'processing' }
  | { state: 'not_found' }
  | {
      state: 'final';
      category: ResultCategory;
      /** v2: the four-digit ResultCode; v3: the status (clear, attention, block, error). */
      resultCode: string;
      resultText: string;
      providerJobId?: string;
      /** The user id the provider holds the job under (v3 answers it; v2 looks up by it). */
      userId?: string;
      isFinal: boolean;
    };

export interface ProviderCallback {
  apiVersion: ProviderApiVersion;
  /** Identifies the event, so a duplicate delivery changes nothing. */
  eventId: string;
  jobId?: string;
  userId?: string;
  providerJobId?: string;
}

/** A provider failure; `retryable` is false when sending the same request again cannot help. */
export class KycProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'KycProviderError';
  }
}

const JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION = 11;
const PRODUCT = 'enhanced_document_verification';
/** v2 zip images packed as files: selfie, ID front, liveness frame, ID back. */
const IMAGE_FILE_TYPE = { selfie: 0, documentFront: 1, liveness: 4, documentBack: 5 } as const;
const truthy = (value: unknown) => value === true || value === 'true' || value === 'True';
const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const E164 = /^\+[1-9]\d{6,14}$/;
/** A v3 job id: a TypeID, `job_` and 26 lower-case base32 characters. */
export const V3_JOB_ID = /^job_[0-9a-hjkmnp-tv-z]{26}$/;
const isPng = (image: Buffer) => image.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
const imageType = (image: Buffer) => (isPng(image) ? 'image/png' : 'image/jpeg');
const extension = (image: Buffer) => (isPng(image) ? 'png' : 'jpg');

/** Given names and last name from one name: the last word is the last name (a lone word is both). */
export function splitName(name: string | undefined): { given_names: string; last_name: string } {
  const words = (name ?? '').trim().split(/\s+/).filter(Boolean);
  if (words.length <= 1) return { given_names: words[0] ?? '', last_name: words[0] ?? '' };
  return { given_names: words.slice(0, -1).join(' '), last_name: words.at(-1)! };
}

export function createKycProviderClient(options: KycProviderOptions) {
  const { baseUrl, partnerId, apiKey } = options;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const now = options.clock ?? (() => new Date());
  const httpsAgent = httpsAgentTrusting(options.ca);
  let v3Token: { token: string; expiresAt: number } | undefined;

  async function send(
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array },
  ): Promise<HttpAnswer> {
    try {
      return await request(new URL(url, baseUrl).href, { ...init, httpsAgent }, timeoutMs);
    } catch (error) {
      throw new KycProviderError(`provider unreachable: ${(error as Error).message}`, undefined, true);
    }
  }

  /**
   * A refusal as an error. 401 is retryable: credentials (or a revoked token) can be fixed while
   * runs wait, and a run failed for it could not resume. `quiet` leaves the body out (a storage
   * answer is not the provider's and may echo anything).
   */
  async function failure(response: HttpAnswer, what: string, quiet = false): Promise<never> {
    const text = quiet ? '' : await response.text().catch(() => '');
    const retryable = response.status >= 500 || response.status === 429 || response.status === 401;
    throw new KycProviderError(
      `${what}: provider answered ${response.status} ${text.slice(0, 200)}`.trim(),
      response.status,
      retryable,
    );
  }

  const signed = () => {
    const timestamp = now().toISOString();
    return { signature: signV2(apiKey, partnerId, timestamp), timestamp };
  };

  const postJson = (path: string, body: unknown) =>
    send(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  /** A multipart body as bytes and its content type (with the boundary). */
  async function multipart(fields: [string, string | Blob, string?][]) {
    const form = new FormData();
    for (const [name, value, fileName] of fields) {
      if (typeof value === 'string') form.append(name, value);
      else form.append(name, value, fileName);
    }
    const encoded = new Response(form);
    return {
      body: new Uint8Array(await encoded.arrayBuffer()),
      contentType: encoded.headers.get('content-type')!,
    };
  }

  const partnerHeaders = () => ({ 'smileid-partner-id': partnerId, 'smileid-api-key': apiKey });

  /** A token from a token answer, or a retryable error for an unreadable one. */
  async function tokenOf(response: HttpAnswer, what: string): Promise<string> {
    const body = (await response.json().catch(() => undefined)) as unknown;
    const token = isObject(body) ? body.token : undefined;
    if (typeof token !== 'string' || token === '')
      throw new KycProviderError(`${what}: unreadable answer`, response.status, true);
    return token;
  }

  /** When a JWT says it expires (ms), if it says so readably. */
  function expiryOf(token: string): number | undefined {
    try {
      const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as unknown;
      const exp = isObject(claims) ? Number(claims.exp) : NaN;
      return Number.isFinite(exp) ? exp * 1000 : undefined;
    } catch {
      return undefined;
    }
  }

  /** v3 API token (no body), reused until a minute before it expires. */
  async function apiToken(): Promise<string> {
    if (v3Token && v3Token.expiresAt - 60_000 > Date.now()) return v3Token.token;
    const response = await send('/v3/token', { method: 'POST', headers: partnerHeaders() });
    if (!response.ok) await failure(response, 'v3 token');
    const token = await tokenOf(response, 'v3 token');
    v3Token = { token, expiresAt: expiryOf(token) ?? Date.now() + ASSUMED.v3TokenLifetimeMs };
    return token;
  }

  /** A v3 call with the API token; a 401 drops the token and tries once more with a fresh one. */
  async function withToken(
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array },
  ): Promise<HttpAnswer> {
    const first = await send(url, { ...init, headers: { ...init.headers, 'smileid-token': await apiToken() } });
    if (first.status !== 401) return first;
    v3Token = undefined;
    return send(url, { ...init, headers: { ...init.headers, 'smileid-token': await apiToken() } });
  }

  /** v3 partner_params: string values only, our job id also under a key callbacks keep. */
  const v3PartnerParams = (jobId: string, userId: string) => ({
    job_id: jobId,
    user_id: userId,
    job_type: String(JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION),
    [ASSUMED.v3JobReferenceParam]: jobId,
  });

  /** An upload URL we may send the zip to: https, on the provider's storage hosts. */
  function storageUrl(given: string): string {
    let url: URL;
    try {
      url = new URL(given);
    } catch {
      throw new KycProviderError('v2 upload: the upload_url is not a URL', undefined, false);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const allowed = options.uploadHosts
      ? options.uploadHosts.some((entry) => (entry.startsWith('.') ? host.endsWith(entry) : host === entry))
      : !isIP(host) && host !== 'localhost';
    if (url.protocol !== 'https:' || !allowed)
      throw new KycProviderError(
        `v2 upload: the upload_url's host ${host} is not the provider's storage`,
        undefined,
        false,
      );
    return url.href;
  }

  async function submitV2(request: DocumentVerificationRequest): Promise<SubmittedJob> {
    const partnerParams = {
      job_id: request.jobId,
      user_id: request.userId,
      job_type: JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION,
    };
    const idInfo = {
      country: request.country,
      id_type: request.idType,
      id_number: request.idNumber ?? '',
      entered: 'true',
    };
    const prepared = await postJson('/v1/upload', {
      ...signed(),
      smile_client_id: partnerId,
      partner_params: partnerParams,
      file_name: 'selfie.zip',
      callback_url: request.callbackUrl,
      model_parameters: {},
      use_enrolled_image: false,
      ...idInfo,
      source_sdk: 'lending-service',
      source_sdk_version: '1.0.0',
    });
    if (!prepared.ok) await failure(prepared, 'v2 upload');
    const serverInformation = (await prepared.json()) as { upload_url?: unknown; smile_job_id?: unknown };
    if (typeof serverInformation.upload_url !== 'string' || typeof serverInformation.smile_job_id !== 'string')
      throw new KycProviderError('v2 upload: unreadable answer', prepared.status, true);
    const { images } = request;
    const files: Record<string, Uint8Array> = {};
    const entries: { image_type_id: number; image: string; file_name: string }[] = [];
    const pack = (typeId: number, image: Buffer, name: string) => {
      const fileName = `${name}.${extension(image)}`;
      files[fileName] = new Uint8Array(image);
      entries.push({ image_type_id: typeId, image: '', file_name: fileName });
    };
    pack(IMAGE_FILE_TYPE.selfie, images.selfie, 'selfie');
    pack(IMAGE_FILE_TYPE.documentFront, images.documentFront, 'id_front');
    if (images.documentBack) pack(IMAGE_FILE_TYPE.documentBack, images.documentBack, 'id_back');
    (images.livenessImages ?? []).forEach((frame, i) => pack(IMAGE_FILE_TYPE.liveness, frame, `liveness_${i}`));
    const { given_names: firstName, last_name: lastName } = splitName(request.applicant.name);
    const info = {
      package_information: { apiVersion: { buildNumber: 0, majorVersion: 2, minorVersion: 0 }, language: 'typescript' },
      misc_information: {
        ...signed(),
        retry: request.retry ? 'true' : 'false',
        partner_params: partnerParams,
        file_name: 'selfie.zip',
        smile_client_id: partnerId,
        callback_url: request.callbackUrl,
        userData: {
          isVerifiedProcess: false,
          name: request.applicant.name ?? '',
          firstName,
          lastName,
          email: request.applicant.email ?? '',
          phone: request.applicant.phone ?? '',
        },
      },
      id_info: idInfo,
      images: entries,
      server_information: serverInformation,
    };
    const zip = zipSync({ 'info.json': strToU8(JSON.stringify(info)), ...files });
    // The presigned storage URL, used as given (its host is not the API's), but only where the
    // provider's storage can be: the zip holds the applicant's images and a fresh signature.
    const uploadUrl = storageUrl(serverInformation.upload_url);
    const uploaded = await send(uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/zip' },
      body: zip,
    });
    if (uploaded.status !== 200) await failure(uploaded, 'v2 zip upload', true);
    return { providerJobId: serverInformation.smile_job_id };
  }

  async function submitV3(request: DocumentVerificationRequest): Promise<SubmittedJob> {
    const { images, applicant, consent } = request;
    const image = (content: Buffer) => new Blob([new Uint8Array(content)], { type: imageType(content) });
    const { body, contentType } = await multipart([
      ['selfie_image', image(images.selfie), 'selfie.jpg'],
      ...(images.livenessImages ?? []).map(
        (frame, i) => ['liveness_images', image(frame), `liveness_${i}.jpg`] as [string, Blob, string],
      ),
      ['document', image(images.documentFront), `document.${extension(images.documentFront)}`],
      ...(images.documentBack
        ? [
            ['document_back', image(images.documentBack), `document_back.${extension(images.documentBack)}`] as [
              string,
              Blob,
              string,
            ],
          ]
        : []),
      ['country', request.country.toUpperCase()],
      ['id_type', request.idType],
      [
        'user_details',
        JSON.stringify({
          ...splitName(applicant.name),
          ...(applicant.email && { email: applicant.email }),
          ...(applicant.phone && E164.test(applicant.phone) && { phone_number: applicant.phone }),
        }),
      ],
      [
        'consent',
        JSON.stringify({
          granted: consent.granted,
          granted_at: consent.grantedAt.toISOString(),
          notice_language: consent.noticeLanguage,
          notice_privacy_policy_url: consent.privacyPolicyUrl,
        }),
      ],
      ['callback_url', request.callbackUrl],
      ['partner_params', JSON.stringify(v3PartnerParams(request.jobId, request.userId))],
    ]);
    const response = await withToken('/v3/enhanced_document_verification', {
      method: 'POST',
      headers: { 'content-type': contentType, 'smileid-partner-id': partnerId, 'user-id': request.userId },
      body,
    });
    if (response.status !== 202) await failure(response, 'v3 enhanced document verification');
    const accepted = (await response.json().catch(() => undefined)) as unknown;
    if (!isObject(accepted) || typeof accepted.job_id !== 'string' || !V3_JOB_ID.test(accepted.job_id))
      throw new KycProviderError('v3 enhanced document verification: unreadable answer', response.status, true);
    return { providerJobId: accepted.job_id };
  }

  async function jobStatusV3(providerJobId: string | undefined): Promise<JobStatus> {
    if (!providerJobId || !V3_JOB_ID.test(providerJobId)) return { state: 'not_found' };
    const response = await withToken(`/v3/status/${encodeURIComponent(providerJobId)}`, {});
    const body = (await response.json().catch(() => undefined)) as unknown;
    const status = isObject(body) ? jsonText(body.status) : undefined;
    // Only the provider's own word makes a job unknown (a proxy's 404 would expire applications).
    if (response.status === 404 && status === 'not_found') return { state: 'not_found' };
    if (response.status === 202 && status === 'processing') return { state: 'processing' };
    if (response.status !== 200 || !isObject(body) || status === undefined) return failure(response, 'v3 status');
    if (status === 'processing') return { state: 'processing' };
    const category = categoryOfV3Status(status);
    return {
      state: 'final',
      category,
      resultCode: status,
      resultText: jsonText(body.message) ?? '',
      // What the answer names, not what was asked: the caller checks both are the same job and user.
      providerJobId: jsonText(body.job_id),
      userId: jsonText(body.user_id),
      isFinal: category !== 'PROVISIONAL',
    };
  }

  async function jobStatusV2(jobId: string, userId: string): Promise<JobStatus> {
    const response = await postJson('/v1/job_status', {
      ...signed(),
      partner_id: partnerId,
      user_id: userId,
      job_id: jobId,
      image_links: false,
      history: false,
    });
    if (response.status === ASSUMED.v2UnknownJob.status) {
      const refusal = (await response.json().catch(() => undefined)) as unknown;
      if (isObject(refusal) && refusal.code === ASSUMED.v2UnknownJob.code) return { state: 'not_found' };
      return failure(response, 'v2 job status');
    }
    if (!response.ok) await failure(response, 'v2 job status');
    const body = (await response.json().catch(() => ({}))) as {
      timestamp?: string;
      signature?: string;
      job_complete?: unknown;
      result?: { ResultCode?: unknown; ResultText?: unknown; SmileJobID?: unknown; IsFinalResult?: unknown };
    };
    // The answer decides an application's fate: an unsigned or stale one is not believed.
    if (!verifyV2(apiKey, partnerId, body, now()))
      throw new KycProviderError('v2 job status: bad response signature', response.status, true);
    if (!truthy(body.job_complete) || typeof body.result !== 'object' || body.result === null)
      return { state: 'processing' };
    const resultCode = jsonText(body.result.ResultCode) ?? '';
    const isFinal = body.result.IsFinalResult === undefined ? true : truthy(body.result.IsFinalResult);
    return {
      state: 'final',
      category: categoryOf(resultCode),
      resultCode,
      resultText: jsonText(body.result.ResultText) ?? '',
      providerJobId: jsonText(body.result.SmileJobID),
      userId,
      isFinal,
    };
  }

  return {
    /** Enhanced document verification (job type 11), on the job's pinned generation. */
    submitDocumentVerification(request: DocumentVerificationRequest): Promise<SubmittedJob> {
      return request.apiVersion === 'v3' ? submitV3(request) : submitV2(request);
    },

    /** A session token for the client SDK, bound to our job id and the applicant. */
    async createSdkSession(request: {
      apiVersion: ProviderApiVersion;
      jobId: string;
      userId: string;
      callbackUrl: string;
    }): Promise<{ token: string }> {
      let response: HttpAnswer;
      if (request.apiVersion === 'v3') {
        const { body, contentType } = await multipart([
          ['user_id', request.userId],
          ['product', PRODUCT],
          ['partner_params', JSON.stringify(v3PartnerParams(request.jobId, request.userId))],
          ['payload', JSON.stringify({ [ASSUMED.v3SessionPayloadCallbackKey]: request.callbackUrl })],
        ]);
        response = await send('/v3/token', {
          method: 'POST',
          headers: { ...partnerHeaders(), 'content-type': contentType },
          body,
        });
      } else {
        response = await postJson('/v1/token', {
          ...signed(),
          partner_id: partnerId,
          user_id: request.userId,
          job_id: request.jobId,
          product: PRODUCT,
          callback_url: request.callbackUrl,
        });
      }
      if (!response.ok) await failure(response, 'sdk session');
      return { token: await tokenOf(response, 'sdk session') };
    },

    /**
     * Where the provider stands on a job. v2 looks it up by our job id and user id and its
     * answer is signed (checked here); v3 by the provider's job id, and answers only a verdict.
     */
    jobStatus(request: {
      apiVersion: ProviderApiVersion;
      jobId: string;
      userId: string;
      providerJobId?: string;
    }): Promise<JobStatus> {
      return request.apiVersion === 'v3'
        ? jobStatusV3(request.providerJobId)
        : jobStatusV2(request.jobId, request.userId);
    },

    /** v3 only: asks the provider to send a lost callback again. */
    async replayCallback(providerJobId: string): Promise<'accepted' | 'not_final'> {
      const response = await withToken(`/v3/replay/${encodeURIComponent(providerJobId)}`, { method: 'POST' });
      if (response.status === 409) return 'not_final';
      if (response.status !== 202) await failure(response, 'v3 replay');
      return 'accepted';
    },

    /**
     * Authenticates and parses a callback. No signature covers a callback's body (v2 signs its
     * timestamp and partner id; v3 webhooks the same, in headers), so even a valid callback is
     * only a trigger: a verdict must be confirmed by a status lookup.
     */
    parseCallback(
      apiVersion: ProviderApiVersion,
      headers: Record<string, string | string[] | undefined>,
      rawBody: string,
    ): ProviderCallback | undefined {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(rawBody) as Record<string, unknown>;
      } catch {
        return undefined;
      }
      if (!isObject(body)) return undefined;
      const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
      if (apiVersion === 'v3') {
        const names = ASSUMED.v3CallbackHeaders;
        const timestamp = headers[names.timestamp];
        if (typeof timestamp !== 'string' || !isFresh(timestamp, now())) return undefined;
        if (!sameSignature(signV2(apiKey, partnerId, timestamp), headers[names.signature])) return undefined;
        const params = isObject(body.partner_params) ? body.partner_params : {};
        // Not covered by the signature: only a well-formed job id may steer a lookup.
        const named = text(headers[names.jobId]);
        const providerJobId = named && V3_JOB_ID.test(named) ? named : undefined;
        return {
          apiVersion,
          eventId: `v3:${providerJobId ?? ''}:${jsonText(body.status) ?? ''}`,
          providerJobId,
          jobId: text(params[ASSUMED.v3JobReferenceParam]),
          userId: text(headers[names.userId]),
        };
      }
      if (!verifyV2(apiKey, partnerId, body as { signature?: unknown; timestamp?: unknown }, now())) return undefined;
      const params = isObject(body.PartnerParams) ? body.PartnerParams : {};
      return {
        apiVersion,
        eventId: `v2:${jsonText(body.SmileJobID) ?? ''}:${jsonText(body.ResultCode) ?? ''}:${jsonText(body.IsFinalResult) ?? 'true'}`,
        providerJobId: jsonText(body.SmileJobID),
        jobId: text(params.job_id),
        userId: text(params.user_id),
      };
    },
  };
}

export type KycProviderClient = ReturnType<typeof createKycProviderClient>;

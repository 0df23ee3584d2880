import { strToU8, zipSync } from 'fflate';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import { fetchWithDeadline, type HttpAnswer, request } from '../http';
import { isFresh, sameSignature, signV2, signV3Callback, verifyV2 } from './signature';

/**
 * Client of the identity-verification provider (protocols/kyc-provider.md), speaking both API
 * generations: v2 (signed bodies, our job id, zip upload) and v3 (token header, the provider's
 * job id, multipart). Nothing here knows whether the other side is the provider or our simulator.
 */
export interface KycProviderOptions {
  baseUrl: string;
  partnerId: string;
  apiKey: string;
  timeoutMs?: number;
  clock?: () => Date;
}

export interface VerificationImages {
  selfie: Buffer;
  documentFront: Buffer;
  documentBack?: Buffer;
  /** Liveness frames run the active check; a lone selfie only the passive one. */
  livenessImages?: Buffer[];
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
  consent: boolean;
  idNumber?: string;
}

export interface SubmittedJob {
  /** v2: the provider's SmileJobID (10 digits); v3: `job_` + 26 characters. */
  providerJobId: string;
}

export type JobStatus =
  | { state: 'processing' }
  | { state: 'not_found' }
  | { state: 'final'; resultCode: string; resultText: string; providerJobId?: string; isFinal: boolean };

export interface ProviderCallback {
  apiVersion: ProviderApiVersion;
  /** Identifies the event, so a duplicate delivery changes nothing. */
  eventId: string;
  jobId?: string;
  userId?: string;
  providerJobId?: string;
  resultCode: string;
  resultText: string;
  isFinal: boolean;
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
/** v2 zip image types (base64 variants): selfie, ID front, liveness frame, ID back. */
const IMAGE_TYPE = { selfie: 2, documentFront: 3, liveness: 6, documentBack: 7 } as const;
const truthy = (value: unknown) => value === true || value === 'true' || value === 'True';

export function createKycProviderClient(options: KycProviderOptions) {
  const { baseUrl, partnerId, apiKey } = options;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const now = options.clock ?? (() => new Date());
  let v3Token: { token: string; expiresAt: number } | undefined;

  async function send(path: string, init: RequestInit): Promise<HttpAnswer> {
    let response: HttpAnswer;
    try {
      // JSON and bodiless calls (status lookups above all) take the cheaper node:http path.
      response =
        init.body === undefined || typeof init.body === 'string'
          ? await request(
              `${baseUrl}${path}`,
              { method: init.method, headers: init.headers as Record<string, string> | undefined, body: init.body },
              timeoutMs,
            )
          : await fetchWithDeadline(`${baseUrl}${path}`, init, timeoutMs);
    } catch (error) {
      throw new KycProviderError(`provider unreachable: ${(error as Error).message}`, undefined, true);
    }
    return response;
  }

  async function failure(response: HttpAnswer, what: string): Promise<never> {
    const text = await response.text().catch(() => '');
    const retryable = response.status >= 500 || response.status === 429;
    throw new KycProviderError(
      `${what}: provider answered ${response.status} ${text.slice(0, 200)}`,
      response.status,
      retryable,
    );
  }

  const signedBody = () => {
    const timestamp = now().toISOString();
    return { partner_id: partnerId, timestamp, signature: signV2(apiKey, partnerId, timestamp) };
  };

  async function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
    return send(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  }

  /** v3 API token, reused until shortly before it expires (about 15 minutes). */
  async function apiToken(): Promise<string> {
    if (v3Token && v3Token.expiresAt - 60_000 > Date.now()) return v3Token.token;
    const response = await postJson('/v3/token', {}, { 'smileid-partner-id': partnerId, 'smileid-api-key': apiKey });
    if (!response.ok) await failure(response, 'v3 token');
    const { token } = (await response.json()) as { token: string };
    const exp = Number(JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString() || '{}').exp);
    v3Token = { token, expiresAt: Number.isFinite(exp) ? exp * 1000 : Date.now() + 14 * 60_000 };
    return token;
  }

  async function submitV2(request: DocumentVerificationRequest): Promise<SubmittedJob> {
    const partnerParams = {
      job_id: request.jobId,
      user_id: request.userId,
      job_type: JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION,
    };
    const prepared = await postJson('/v1/upload', {
      ...signedBody(),
      smile_client_id: partnerId,
      source_sdk: 'lending-service',
      source_sdk_version: '1.0.0',
      file_name: `${request.jobId}.zip`,
      partner_params: partnerParams,
      model_parameters: {},
      callback_url: request.callbackUrl,
    });
    if (!prepared.ok) await failure(prepared, 'v2 upload');
    const { upload_url: uploadUrl, smile_job_id: smileJobId } = (await prepared.json()) as {
      upload_url: string;
      smile_job_id: string;
    };
    const { images } = request;
    const imageEntries = [
      { image_type_id: IMAGE_TYPE.selfie, image: images.selfie.toString('base64') },
      { image_type_id: IMAGE_TYPE.documentFront, image: images.documentFront.toString('base64') },
      ...(images.documentBack
        ? [{ image_type_id: IMAGE_TYPE.documentBack, image: images.documentBack.toString('base64') }]
        : []),
      ...(images.livenessImages ?? []).map((frame) => ({
        image_type_id: IMAGE_TYPE.liveness,
        image: frame.toString('base64'),
      })),
    ];
    const info = {
      package_information: { apiVersion: { buildNumber: 0, majorVersion: 2, minorVersion: 0 }, language: 'typescript' },
      misc_information: {
        ...signedBody(),
        retry: 'false',
        partner_params: partnerParams,
        file_name: `${request.jobId}.zip`,
        smile_client_id: partnerId,
        callback_url: request.callbackUrl,
      },
      id_info: {
        country: request.country,
        id_type: request.idType,
        id_number: request.idNumber ?? '',
        entered: 'true',
      },
      consent_information: {
        consented: {
          personal_details: request.consent,
          contact_information: request.consent,
          document_information: request.consent,
        },
      },
      images: imageEntries,
    };
    const zip = zipSync({ 'info.json': strToU8(JSON.stringify(info)) });
    const uploaded = await send(new URL(uploadUrl, baseUrl).pathname, {
      method: 'PUT',
      headers: { 'content-type': 'application/zip' },
      body: zip,
    });
    if (!uploaded.ok) await failure(uploaded, 'v2 zip upload');
    return { providerJobId: smileJobId };
  }

  async function submitV3(request: DocumentVerificationRequest): Promise<SubmittedJob> {
    const form = new FormData();
    const { images } = request;
    form.append('selfie_image', new Blob([images.selfie]), 'selfie.jpg');
    for (const [i, frame] of (images.livenessImages ?? []).entries())
      form.append('liveness_images', new Blob([frame]), `liveness-${i}.jpg`);
    form.append('document', new Blob([images.documentFront]), 'document.jpg');
    if (images.documentBack) form.append('document_back', new Blob([images.documentBack]), 'document_back.jpg');
    form.append('country', request.country);
    form.append('id_type', request.idType);
    form.append('user_details', JSON.stringify({ id_number: request.idNumber ?? '' }));
    form.append('consent', String(request.consent));
    form.append('callback_url', request.callbackUrl);
    form.append(
      'partner_params',
      JSON.stringify({
        job_id: request.jobId,
        user_id: request.userId,
        job_type: JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION,
      }),
    );
    const response = await send('/v3/enhanced_document_verification', {
      method: 'POST',
      headers: { 'SmileID-Token': await apiToken() },
      body: form,
    });
    if (response.status !== 202 && !response.ok) await failure(response, 'v3 enhanced document verification');
    return { providerJobId: ((await response.json()) as { job_id: string }).job_id };
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
      const partnerParams = {
        job_id: request.jobId,
        user_id: request.userId,
        job_type: JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION,
      };
      const response =
        request.apiVersion === 'v3'
          ? await postJson(
              '/v3/token',
              {
                product: 'enhanced_document_verification',
                user_id: request.userId,
                partner_params: partnerParams,
                callback_url: request.callbackUrl,
              },
              { 'smileid-partner-id': partnerId, 'smileid-api-key': apiKey },
            )
          : await postJson('/v1/token', {
              ...signedBody(),
              user_id: request.userId,
              job_id: request.jobId,
              product: 'enhanced_document_verification',
              callback_url: request.callbackUrl,
            });
      if (!response.ok) await failure(response, 'sdk session');
      return { token: ((await response.json()) as { token: string }).token };
    },

    /**
     * Where the provider stands on a job. v2 looks it up by our job id and user id and its
     * answer is signed (checked here); v3 by the provider's job id.
     */
    async jobStatus(request: {
      apiVersion: ProviderApiVersion;
      jobId: string;
      userId: string;
      providerJobId?: string;
    }): Promise<JobStatus> {
      if (request.apiVersion === 'v3') {
        if (!request.providerJobId) return { state: 'not_found' };
        const response = await send(`/v3/status/${encodeURIComponent(request.providerJobId)}`, {
          headers: { 'SmileID-Token': await apiToken() },
        });
        if (response.status === 404) return { state: 'not_found' };
        if (response.status === 202) return { state: 'processing' };
        if (!response.ok) await failure(response, 'v3 status');
        const body = (await response.json()) as {
          result?: { ResultCode?: string; ResultText?: string; IsFinalResult?: unknown };
          job_id?: string;
        };
        return {
          state: 'final',
          resultCode: String(body.result?.ResultCode ?? ''),
          resultText: String(body.result?.ResultText ?? ''),
          providerJobId: body.job_id,
          isFinal: body.result?.IsFinalResult === undefined ? true : truthy(body.result.IsFinalResult),
        };
      }
      const response = await postJson('/v1/job_status', {
        ...signedBody(),
        user_id: request.userId,
        job_id: request.jobId,
        image_links: false,
        history: false,
      });
      if (response.status === 404) return { state: 'not_found' };
      if (!response.ok) await failure(response, 'v2 job status');
      const body = (await response.json()) as {
        timestamp?: string;
        signature?: string;
        job_complete?: unknown;
        result?: { ResultCode?: string; ResultText?: string; SmileJobID?: string; IsFinalResult?: unknown };
      };
      // The answer decides an application's fate: an unsigned or stale one is not believed.
      if (!verifyV2(apiKey, partnerId, body, now()))
        throw new KycProviderError('v2 job status: bad response signature', response.status, true);
      if (!truthy(body.job_complete)) return { state: 'processing' };
      return {
        state: 'final',
        resultCode: String(body.result?.ResultCode ?? ''),
        resultText: String(body.result?.ResultText ?? ''),
        providerJobId: body.result?.SmileJobID,
        isFinal: body.result?.IsFinalResult === undefined ? true : truthy(body.result.IsFinalResult),
      };
    },

    /** v3 only: asks the provider to send a lost callback again. */
    async replayCallback(providerJobId: string): Promise<'accepted' | 'not_final'> {
      const response = await send(`/v3/replay/${encodeURIComponent(providerJobId)}`, {
        method: 'POST',
        headers: { 'SmileID-Token': await apiToken() },
      });
      if (response.status === 409) return 'not_final';
      if (!response.ok) await failure(response, 'v3 replay');
      return 'accepted';
    },

    /**
     * Authenticates and parses a callback. The signature does not cover a v2 body, so even a
     * valid callback is only a trigger: a final verdict must be confirmed by a status lookup.
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
      if (apiVersion === 'v3') {
        const timestamp = headers['smileid-timestamp'];
        const signature = headers['smileid-request-signature'];
        if (typeof timestamp !== 'string' || !isFresh(timestamp, now())) return undefined;
        if (!sameSignature(signV3Callback(apiKey, timestamp, rawBody), signature)) return undefined;
        const result = (body.result ?? {}) as Record<string, unknown>;
        const params = (body.partner_params ?? {}) as Record<string, unknown>;
        const resultCode = String(result.ResultCode ?? '');
        const isFinal = result.IsFinalResult === undefined ? true : truthy(result.IsFinalResult);
        return {
          apiVersion,
          eventId: `v3:${String(body.job_id)}:${resultCode}:${isFinal}`,
          providerJobId: typeof body.job_id === 'string' ? body.job_id : undefined,
          jobId: typeof params.job_id === 'string' ? params.job_id : undefined,
          userId: typeof params.user_id === 'string' ? params.user_id : undefined,
          resultCode,
          resultText: String(result.ResultText ?? ''),
          isFinal,
        };
      }
      if (!verifyV2(apiKey, partnerId, body as { signature?: unknown; timestamp?: unknown }, now())) return undefined;
      const params = (body.PartnerParams ?? {}) as Record<string, unknown>;
      const resultCode = String(body.ResultCode ?? '');
      const isFinal = body.IsFinalResult === undefined ? true : truthy(body.IsFinalResult);
      return {
        apiVersion,
        eventId: `v2:${String(body.SmileJobID)}:${resultCode}:${isFinal}`,
        providerJobId: body.SmileJobID === undefined ? undefined : String(body.SmileJobID),
        jobId: typeof params.job_id === 'string' ? params.job_id : undefined,
        userId: typeof params.user_id === 'string' ? params.user_id : undefined,
        resultCode,
        resultText: String(body.ResultText ?? ''),
        isFinal,
      };
    },
  };
}

export type KycProviderClient = ReturnType<typeof createKycProviderClient>;

import { jsonText } from '../../domain/text';
import { categoryOfV3Status } from '../../domain/kyc/result-codes';
import type { HttpAnswer } from '../http';
import { ASSUMED } from './assumed';
import {
  type DocumentVerificationRequest,
  E164,
  extension,
  imageType,
  isObject,
  JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION,
  type JobStatus,
  KycProviderError,
  nonEmptyText,
  PRODUCT,
  type ProviderCallback,
  splitName,
  type SubmittedJob,
  V3_JOB_ID,
} from './protocol';
import { isFresh, sameSignature, signV2 } from './signature';
import { failure, type KycTransport, multipart, type SendInit, tokenOf } from './transport';

/**
 * The provider's v3 API (protocols/kyc-provider.md): an API token in a header (kept here, one
 * per client), the provider's job id, multipart submissions, status and replay by that id, and
 * webhooks signed in headers. ./client.ts picks it for jobs pinned to v3.
 */
export function createV3Operations(transport: KycTransport) {
  const { partnerId, send, partnerHeaders } = transport;
  let v3Token: { token: string; expiresAt: number } | undefined;

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
  async function withToken(url: string, init: SendInit): Promise<HttpAnswer> {
    const first = await send(url, { ...init, headers: { ...init.headers, 'smileid-token': await apiToken() } });
    if (first.status !== 401) return first;
    v3Token = undefined;
    return send(url, { ...init, headers: { ...init.headers, 'smileid-token': await apiToken() } });
  }

  async function submit(request: DocumentVerificationRequest): Promise<SubmittedJob> {
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

  async function jobStatus(providerJobId: string | undefined): Promise<JobStatus> {
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

  /** The SDK token request: partner credentials, our job id and the callback bound into the token. */
  async function sdkSession(request: { jobId: string; userId: string; callbackUrl: string }): Promise<HttpAnswer> {
    const { body, contentType } = await multipart([
      ['user_id', request.userId],
      ['product', PRODUCT],
      ['partner_params', JSON.stringify(v3PartnerParams(request.jobId, request.userId))],
      ['payload', JSON.stringify({ [ASSUMED.v3SessionPayloadCallbackKey]: request.callbackUrl })],
    ]);
    return send('/v3/token', {
      method: 'POST',
      headers: { ...partnerHeaders(), 'content-type': contentType },
      body,
    });
  }

  async function replayCallback(providerJobId: string): Promise<'accepted' | 'not_final'> {
    const response = await withToken(`/v3/replay/${encodeURIComponent(providerJobId)}`, { method: 'POST' });
    if (response.status === 409) return 'not_final';
    if (response.status !== 202) await failure(response, 'v3 replay');
    return 'accepted';
  }

  const callback = (headers: Record<string, string | string[] | undefined>, body: Record<string, unknown>) =>
    callbackV3(transport, headers, body);

  return { submit, jobStatus, sdkSession, replayCallback, callback };
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

/** v3 partner_params: string values only, our job id also under a key callbacks keep. */
const v3PartnerParams = (jobId: string, userId: string) => ({
  job_id: jobId,
  user_id: userId,
  job_type: String(JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION),
  [ASSUMED.v3JobReferenceParam]: jobId,
});

/** A parsed webhook, if the signature of its timestamp and our partner id (in headers) holds. */
function callbackV3(
  { partnerId, apiKey, now }: KycTransport,
  headers: Record<string, string | string[] | undefined>,
  body: Record<string, unknown>,
): ProviderCallback | undefined {
  const names = ASSUMED.v3CallbackHeaders;
  const timestamp = headers[names.timestamp];
  if (typeof timestamp !== 'string' || !isFresh(timestamp, now())) return undefined;
  if (!sameSignature(signV2(apiKey, partnerId, timestamp), headers[names.signature])) return undefined;
  const params = isObject(body.partner_params) ? body.partner_params : {};
  // Not covered by the signature: only a well-formed job id may steer a lookup.
  const named = nonEmptyText(headers[names.jobId]);
  const providerJobId = named && V3_JOB_ID.test(named) ? named : undefined;
  return {
    apiVersion: 'v3',
    eventId: `v3:${providerJobId ?? ''}:${jsonText(body.status) ?? ''}`,
    providerJobId,
    jobId: nonEmptyText(params[ASSUMED.v3JobReferenceParam]),
    userId: nonEmptyText(headers[names.userId]),
  };
}

import { isIP } from 'node:net';
import { strToU8, zipSync } from 'fflate';
import { jsonText } from '../../domain/text';
import { categoryOf } from '../../domain/kyc/result-codes';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import type { HttpAnswer } from '../http';
import { ASSUMED } from './assumed';
import {
  type DocumentVerificationRequest,
  extension,
  IMAGE_FILE_TYPE,
  isObject,
  JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION,
  type JobStatus,
  KycProviderError,
  type KycProviderOptions,
  nonEmptyText,
  PRODUCT,
  type ProviderCallback,
  splitName,
  type SubmittedJob,
  truthy,
} from './protocol';
import { verifyV2 } from './signature';
import { failure, type KycTransport } from './transport';

/**
 * The provider's v2 API (protocols/kyc-provider.md): JSON bodies signed with our timestamp, our
 * job id, the images as a zip PUT to a presigned storage URL, signed job_status answers and
 * callbacks. ./client.ts picks it for jobs pinned to v2.
 */
export function createV2Operations(transport: KycTransport, options: Pick<KycProviderOptions, 'uploadHosts'>) {
  const { partnerId, apiKey, now, send, signed, postJson } = transport;

  async function submit(request: DocumentVerificationRequest): Promise<SubmittedJob> {
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
    const uploadUrl = storageUrl(serverInformation.upload_url, options.uploadHosts);
    const uploaded = await send(uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/zip' },
      body: zip,
    });
    if (uploaded.status !== 200) await failure(uploaded, 'v2 zip upload', true);
    return { providerJobId: serverInformation.smile_job_id };
  }

  async function jobStatus(jobId: string, userId: string): Promise<JobStatus> {
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

  /** The SDK token request: a signed JSON body naming our job id, the applicant and the callback. */
  function sdkSession(request: { jobId: string; userId: string; callbackUrl: string }): Promise<HttpAnswer> {
    return postJson('/v1/token', {
      ...signed(),
      partner_id: partnerId,
      user_id: request.userId,
      job_id: request.jobId,
      product: PRODUCT,
      callback_url: request.callbackUrl,
    });
  }

  const callback = (apiVersion: ProviderApiVersion, body: Record<string, unknown>) =>
    callbackV2(transport, apiVersion, body);

  return { submit, jobStatus, sdkSession, callback };
}

/** An upload URL we may send the zip to: https, on the provider's storage hosts. */
function storageUrl(given: string, uploadHosts: readonly string[] | undefined): string {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new KycProviderError('v2 upload: the upload_url is not a URL', undefined, false);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const allowed = uploadHosts
    ? uploadHosts.some((entry) => (entry.startsWith('.') ? host.endsWith(entry) : host === entry))
    : !isIP(host) && host !== 'localhost';
  if (url.protocol !== 'https:' || !allowed)
    throw new KycProviderError(
      `v2 upload: the upload_url's host ${host} is not the provider's storage`,
      undefined,
      false,
    );
  return url.href;
}

/** A parsed callback body, if its signature (timestamp and partner id, in the body) holds. */
function callbackV2(
  { partnerId, apiKey, now }: KycTransport,
  apiVersion: ProviderApiVersion,
  body: Record<string, unknown>,
): ProviderCallback | undefined {
  if (!verifyV2(apiKey, partnerId, body as { signature?: unknown; timestamp?: unknown }, now())) return undefined;
  const params = isObject(body.PartnerParams) ? body.PartnerParams : {};
  return {
    apiVersion,
    eventId: `v2:${jsonText(body.SmileJobID) ?? ''}:${jsonText(body.ResultCode) ?? ''}:${jsonText(body.IsFinalResult) ?? 'true'}`,
    providerJobId: jsonText(body.SmileJobID),
    jobId: nonEmptyText(params.job_id),
    userId: nonEmptyText(params.user_id),
  };
}

import type { ProviderApiVersion } from '../../domain/kyc/provider-version';
import type { HttpAnswer } from '../http';
import {
  type DocumentVerificationRequest,
  isObject,
  type JobStatus,
  type KycProviderOptions,
  type ProviderCallback,
  type SubmittedJob,
} from './protocol';
import { createKycTransport, failure, tokenOf } from './transport';
import { createV2Operations } from './v2';
import { createV3Operations } from './v3';

/**
 * Client of the identity-verification provider (protocols/kyc-provider.md), speaking both API
 * generations: v2 (signed JSON bodies, our job id, a zip PUT to a presigned storage URL) and v3
 * (token header, the provider's job id, multipart). Nothing here knows whether the other side
 * is the provider or our simulator; test/contracts/kyc holds the exchanges it must produce.
 * This module picks the job's generation; ./v2.ts and ./v3.ts speak them over ./transport.ts,
 * and ./protocol.ts holds the types and forms they share.
 */
export {
  type Applicant,
  type Consent,
  type DocumentVerificationRequest,
  type JobStatus,
  KycProviderError,
  type KycProviderOptions,
  type ProviderCallback,
  splitName,
  type SubmittedJob,
  V3_JOB_ID,
  type VerificationImages,
} from './protocol';

export function createKycProviderClient(options: KycProviderOptions) {
  const transport = createKycTransport(options);
  const v2 = createV2Operations(transport, options);
  const v3 = createV3Operations(transport);

  return {
    /** Enhanced document verification (job type 11), on the job's pinned generation. */
    submitDocumentVerification(request: DocumentVerificationRequest): Promise<SubmittedJob> {
      return request.apiVersion === 'v3' ? v3.submit(request) : v2.submit(request);
    },

    /** A session token for the client SDK, bound to our job id and the applicant. */
    async createSdkSession(request: {
      apiVersion: ProviderApiVersion;
      jobId: string;
      userId: string;
      callbackUrl: string;
    }): Promise<{ token: string }> {
      let response: HttpAnswer;
      if (request.apiVersion === 'v3') response = await v3.sdkSession(request);
      else response = await v2.sdkSession(request);
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
        ? v3.jobStatus(request.providerJobId)
        : v2.jobStatus(request.jobId, request.userId);
    },

    /** v3 only: asks the provider to send a lost callback again. */
    replayCallback(providerJobId: string): Promise<'accepted' | 'not_final'> {
      return v3.replayCallback(providerJobId);
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
      return apiVersion === 'v3' ? v3.callback(headers, body) : v2.callback(apiVersion, body);
    },
  };
}

export type KycProviderClient = ReturnType<typeof createKycProviderClient>;

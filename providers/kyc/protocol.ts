import type { ResultCategory } from '../../domain/kyc/result-codes';
import type { ProviderApiVersion } from '../../domain/kyc/provider-version';

/**
 * The identity-verification provider's protocol (protocols/kyc-provider.md) as the client's
 * modules share it: what callers pass and get back, the provider error, and the job types, ids
 * and field forms both API generations use. Exported to callers through ./client.ts.
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

export const JOB_TYPE_ENHANCED_DOCUMENT_VERIFICATION = 11;
export const PRODUCT = 'enhanced_document_verification';
/** v2 zip images packed as files: selfie, ID front, liveness frame, ID back. */
export const IMAGE_FILE_TYPE = { selfie: 0, documentFront: 1, liveness: 4, documentBack: 5 } as const;
export const truthy = (value: unknown) => value === true || value === 'true' || value === 'True';
export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
/** A callback's id field, if it is a non-empty string. */
export const nonEmptyText = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
export const E164 = /^\+[1-9]\d{6,14}$/;
/** A v3 job id: a TypeID, `job_` and 26 lower-case base32 characters. */
export const V3_JOB_ID = /^job_[0-9a-hjkmnp-tv-z]{26}$/;
const isPng = (image: Buffer) => image.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
export const imageType = (image: Buffer) => (isPng(image) ? 'image/png' : 'image/jpeg');
export const extension = (image: Buffer) => (isPng(image) ? 'png' : 'jpg');

/** Given names and last name from one name: the last word is the last name (a lone word is both). */
export function splitName(name: string | undefined): { given_names: string; last_name: string } {
  const words = (name ?? '').trim().split(/\s+/).filter(Boolean);
  if (words.length <= 1) return { given_names: words[0] ?? '', last_name: words[0] ?? '' };
  return { given_names: words.slice(0, -1).join(' '), last_name: words.at(-1)! };
}

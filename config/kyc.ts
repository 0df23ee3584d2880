import { z } from 'zod';
import { addressList, byteSize, duration, flag, optionalUrl, positiveInt } from './fields';

/** Identity verification: the provider, what a submission may carry, and how long each step may take. */
export const kycSettings = {
  /** The identity-verification provider (a simulator under npm start and the tests). */
  KYC_PROVIDER_URL: optionalUrl,
  KYC_PARTNER_ID: z.string().min(1).optional(),
  KYC_API_KEY: z.string().min(1).optional(),
  /**
   * PEM of a CA the client trusts besides the system's, for the provider and its upload URLs
   * (development: the simulator's certificate; production: unset).
   */
  KYC_PROVIDER_CA: z.string().min(1).optional(),
  KYC_PROVIDER_NAME: z.string().min(1).default('smile_identity'),
  /** When set, identity-verification callbacks are taken only from these source addresses. */
  KYC_CALLBACK_SOURCES: addressList,
  /** Largest identity-verification callback body (v2 result callbacks reach 1.5 MB). */
  KYC_CALLBACK_BODY_LIMIT: byteSize('2mb'),
  /**
   * Hosts a v2 upload URL may point at (the provider's storage; `.suffix` matches subdomains).
   * Unset: any https host but an IP literal or localhost. The zip carries the applicant's images.
   */
  KYC_UPLOAD_HOSTS: z
    .string()
    .optional()
    .transform((v) =>
      v
        ? v
            .split(',')
            .map((h) => h.trim())
            .filter(Boolean)
        : undefined,
    ),
  /** Largest decoded image a verification accepts (selfie, document side or liveness frame). */
  KYC_MAX_IMAGE_BYTES: byteSize('5mb'),
  KYC_LIVENESS_MIN_IMAGES: z.coerce.number().int().min(0).default(3),
  KYC_LIVENESS_MAX_IMAGES: z.coerce.number().int().min(1).default(8),
  KYC_CONSENT_REQUIRED: flag(true),
  KYC_PRIVACY_POLICY_URL: z.url().default('https://lending-service.example/privacy'),
  /** After this many rejected submissions an application may not be submitted again for a while. */
  KYC_MAX_RESUBMISSIONS: z.coerce.number().int().min(0).default(3),
  KYC_REAPPLY_BLOCK: duration('30d'),
  /** How long a submitted KYC job may stay with the provider before the expiry sweep looks at it. */
  KYC_SUBMISSION_WINDOW: duration('24h'),
  KYC_CALLBACK_WAIT: duration('30m'),
  KYC_STATUS_RECOVERY_TIMEOUT: duration('5s'),
  /** GET status asks the provider first when a pending verification has not heard from it for this long. */
  KYC_STATUS_STALE_AFTER: duration('2m'),
  KYC_EXPIRY_SWEEP_INTERVAL: duration('15m'),
  /** Applications the sweep asks the provider about per batch (per activity). */
  KYC_SWEEP_BATCH_SIZE: positiveInt(500),
  /** Provider status lookups one sweep batch keeps in flight. */
  KYC_SWEEP_CONCURRENCY: positiveInt(8),
};

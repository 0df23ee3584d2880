/**
 * Every point of the identity-verification protocol that no public source settles
 * (protocols/kyc-provider.md marks them *assumed*), in one place for the client and the
 * simulator alike. When the provider's documentation settles one, change it here only.
 */
export const ASSUMED = {
  /** v3 API and SDK tokens: lifetime unpublished. */
  v3TokenLifetimeMs: 15 * 60_000,
  /** v2 signatures (requests, job_status answers, callbacks) older or newer than this are refused. */
  signatureFreshnessMs: 5 * 60_000,
  /** v2 error 2205 (bad signature) comes with HTTP 401; every other v2 error with 400. */
  v2UnauthorizedStatus: 401,
  /**
   * A v2 job exists once its zip is uploaded: before that job_status does not know it, and
   * /v1/upload may prepare the same job id again (a retry after a lost answer relies on it).
   */
  v2JobExistsFromUpload: true,
  /** v2 job_status of a job the provider does not know: 404 with code 2204. */
  v2UnknownJob: { status: 404, code: '2204', error: 'Job not found' },
  /**
   * v3 webhook headers: the signature and its timestamp as `/v3/aml/sync` names them, plus the
   * job and user ids (partner_params in the body lose job_id, user_id and job_type).
   */
  v3CallbackHeaders: {
    signature: 'response-signature',
    timestamp: 'response-timestamp',
    jobId: 'smileid-job-id',
    userId: 'user-id',
  },
  /** The EDV callback body: the One-Time AML envelope with this product name. */
  v3CallbackProduct: 'enhanced_document_verification',
  /** EDV object fields (user_details, consent, partner_params, metadata) travel as form parts holding JSON. */
  v3JsonParts: ['user_details', 'consent', 'partner_params', 'metadata', 'payload'] as const,
  /**
   * Our own partner_params key carrying our job id: v3 callbacks strip job_id, user_id and
   * job_type from partner_params but echo every other key.
   */
  v3JobReferenceParam: 'lending_job_id',
  /** An SDK session's callback URL is bound into its v3 token through `payload`. */
  v3SessionPayloadCallbackKey: 'callback_url',
} as const;

import { z } from 'zod';
import { byteSize, duration, flag, optionalUrl, positiveInt } from './fields';

/**
 * Invoice financing: the S3-compatible object store merchants upload documents to. Unset
 * OBJECT_STORE_ENDPOINT means AWS S3 in production; `npm start` and the tests start a local
 * store (versitygw) and point these at it.
 */
export const financingSettings = {
  /** The store's endpoint (MinIO, versitygw, Ceph...); unset: AWS S3 in OBJECT_STORE_REGION. */
  OBJECT_STORE_ENDPOINT: optionalUrl,
  OBJECT_STORE_REGION: z.string().min(1).default('us-east-1'),
  /** The bucket documents are kept in (created by npm start and the tests, not in production). */
  OBJECT_STORE_BUCKET: z.string().min(3).max(63).default('financing-documents'),
  /** Unset: the AWS SDK's default credential chain (an IAM role, the environment...). */
  OBJECT_STORE_ACCESS_KEY_ID: z.string().min(1).optional(),
  /** Secret. */
  OBJECT_STORE_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Path-style addressing (`endpoint/bucket/key`), as most S3-compatible stores want. */
  OBJECT_STORE_FORCE_PATH_STYLE: flag(false),
  /** How long a presigned upload URL stays valid. */
  UPLOAD_URL_TTL: duration('15m'),
  /** The largest document a merchant may upload. */
  UPLOAD_MAX_BYTES: byteSize('10mb'),
  /**
   * Presign quota, per merchant: uploads presigned and still pending (their URL still valid, no
   * invoice registered on them yet). Beyond it a presign is 429 until one is registered or expires.
   */
  UPLOAD_QUOTA_PENDING: positiveInt(50),
  /** Presign quota, per merchant: bytes presigned in UPLOAD_QUOTA_WINDOW (rolling). Beyond it a presign is 429. */
  UPLOAD_QUOTA_BYTES: byteSize('1024mb'),
  UPLOAD_QUOTA_WINDOW: duration('1d'),
  /**
   * How long after its upload URL expires a registered document may still appear in the store
   * (an upload begun just before expiry is still arriving); then the invoice is NOT_UPLOADED.
   */
  DOCUMENT_UPLOAD_GRACE: duration('2m'),
  /** The invoice-extraction provider: Azure AI Document Intelligence's endpoint (https://<resource>.cognitiveservices.azure.com). */
  EXTRACTION_URL: optionalUrl,
  /** Secret: the Document Intelligence resource's key. Without it (or the URL) registration answers 503. */
  EXTRACTION_API_KEY: z.string().min(1).optional(),
  /** How long one extraction may take, retries of an unavailable provider included; then it is FAILED. */
  EXTRACTION_DEADLINE: duration('15m'),
  /**
   * Extractions begun per document (its registration and each re-extraction: each is a paid
   * analysis) in EXTRACTION_LIMIT_WINDOW (rolling). Beyond it a re-extraction is 429.
   */
  EXTRACTION_LIMIT: positiveInt(5),
  EXTRACTION_LIMIT_WINDOW: duration('1h'),
};

import {
  CreateBucketCommand,
  HeadObjectCommand,
  NotFound,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

export interface ObjectStoreSettings {
  OBJECT_STORE_ENDPOINT?: string;
  OBJECT_STORE_REGION: string;
  OBJECT_STORE_BUCKET: string;
  OBJECT_STORE_ACCESS_KEY_ID?: string;
  OBJECT_STORE_SECRET_ACCESS_KEY?: string;
  OBJECT_STORE_FORCE_PATH_STYLE: boolean;
}

/** What the service needs from object storage: presigned uploads, and reading back what arrived. */
export interface ObjectStore {
  /**
   * A presigned PUT of exactly `sizeBytes` bytes of `contentType` to `key`, valid for
   * `expiresInSeconds`: Content-Type and Content-Length are signed, so the store itself refuses
   * another type, another size, another key, or a late upload.
   */
  presignPut(input: {
    key: string;
    contentType: string;
    sizeBytes: number;
    expiresInSeconds: number;
  }): Promise<{ url: string; expiresAt: Date }>;
  /** What the store holds at `key` (its size and content type), or undefined. */
  head(key: string): Promise<{ sizeBytes: number; contentType?: string } | undefined>;
  /** Creates the bucket when it is missing (development stores; production buckets are provisioned). */
  ensureBucket(): Promise<void>;
}

/**
 * The object store through the AWS SDK v3, pointed at S3 or any S3-compatible store.
 *
 * Presigned PUTs sign Content-Type and Content-Length rather than using a presigned POST policy
 * with content-length-range: the client declares the exact size it will send (size_bytes), a PUT
 * is one plain request from any HTTP client, and an exact signed length is stricter than a range.
 * The SDK's checksums are requested only when an operation needs one: otherwise the presigner puts
 * a CRC32 of the empty body in the URL, and S3 would refuse the real upload for it.
 */
export function createObjectStore(settings: ObjectStoreSettings): ObjectStore {
  const bucket = settings.OBJECT_STORE_BUCKET;
  const client = new S3Client({
    region: settings.OBJECT_STORE_REGION,
    ...(settings.OBJECT_STORE_ENDPOINT && { endpoint: settings.OBJECT_STORE_ENDPOINT }),
    forcePathStyle: settings.OBJECT_STORE_FORCE_PATH_STYLE,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(settings.OBJECT_STORE_ACCESS_KEY_ID &&
      settings.OBJECT_STORE_SECRET_ACCESS_KEY && {
        credentials: {
          accessKeyId: settings.OBJECT_STORE_ACCESS_KEY_ID,
          secretAccessKey: settings.OBJECT_STORE_SECRET_ACCESS_KEY,
        },
      }),
  });
  return {
    async presignPut({ key, contentType, sizeBytes, expiresInSeconds }) {
      const signedAt = Date.now();
      const url = await getSignedUrl(
        client,
        new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: contentType, ContentLength: sizeBytes }),
        { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-type', 'content-length']) },
      );
      return { url, expiresAt: new Date(signedAt + expiresInSeconds * 1000) };
    },
    async head(key) {
      try {
        const object = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return { sizeBytes: Number(object.ContentLength ?? 0), contentType: object.ContentType };
      } catch (error) {
        if (
          error instanceof NotFound ||
          (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404)
        )
          return undefined;
        throw error;
      }
    },
    async ensureBucket() {
      try {
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw error;
      }
    },
  };
}

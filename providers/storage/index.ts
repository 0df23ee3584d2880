import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

export interface ObjectStoreSettings {
  OBJECT_STORE_ENDPOINT?: string;
  OBJECT_STORE_REGION: string;
  OBJECT_STORE_BUCKET: string;
  OBJECT_STORE_ACCESS_KEY_ID?: string;
  OBJECT_STORE_SECRET_ACCESS_KEY?: string;
  OBJECT_STORE_FORCE_PATH_STYLE: boolean;
}

/** What the store holds at a key. */
export interface StoredObject {
  sizeBytes: number;
  contentType?: string;
  lastModified?: Date;
}

/**
 * What the service needs from object storage: presigned uploads, reading back what arrived, and
 * keeping its own copy of a document that nothing else can write.
 */
export interface ObjectStore {
  /**
   * A presigned PUT of exactly `sizeBytes` bytes of `contentType` to `key`, valid for
   * `expiresInSeconds`: Content-Type and Content-Length are signed (and nothing else a client
   * would not send on its own), so a plain `PUT url` with that Content-Type and the body works,
   * and the store itself refuses another type, another size, another key or a late upload.
   * Within its validity the URL may be used again: a second PUT replaces the object at `key`
   * (S3 has no create-only presigned PUT without a header the client must add). `headers` are
   * the headers signed that the client sets itself (Content-Type; Content-Length comes with any body).
   */
  presignPut(input: {
    key: string;
    contentType: string;
    sizeBytes: number;
    expiresInSeconds: number;
  }): Promise<{ url: string; expiresAt: Date; headers: Record<string, string> }>;
  /**
   * Writes `body` at `key` only if nothing is there (`If-None-Match: *`), with its SHA-256 for
   * the store to verify: true when written, false when `key` already held an object (which stays
   * as it was).
   */
  storeOnce(input: { key: string; body: Uint8Array; contentType: string }): Promise<boolean>;
  /** Removes the object at `key`, if any. */
  remove(key: string): Promise<void>;
  /** A presigned GET of `key`, valid for `expiresInSeconds` (for a provider that reads the document). */
  presignGet(input: { key: string; expiresInSeconds: number }): Promise<{ url: string; expiresAt: Date }>;
  /** What the store holds at `key` (its size, content type and when it was written), or undefined. */
  head(key: string): Promise<StoredObject | undefined>;
  /**
   * The first `bytes` bytes of the object at `key` (fewer if it is shorter) by one ranged GET, with
   * what head answers (its whole size from Content-Range), or undefined when there is none.
   */
  readStart(key: string, bytes: number): Promise<(StoredObject & { head: Uint8Array }) | undefined>;
  /** Creates the bucket when it is missing (development stores; production buckets are provisioned). */
  ensureBucket(): Promise<void>;
}

/** SHA-256 and HMAC-SHA256 for the signer, from node:crypto (the interface @smithy/types names Checksum). */
type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: SourceData) =>
  typeof data === 'string'
    ? data
    : data instanceof ArrayBuffer
      ? new Uint8Array(data)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
class NodeSha256 {
  private readonly hash;
  constructor(secret?: SourceData) {
    this.hash = secret ? createHmac('sha256', bytes(secret)) : createHash('sha256');
  }
  update(data: SourceData) {
    this.hash.update(bytes(data));
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
}

/** A missing object (404), however the SDK names it. */
const isMissing = (error: unknown) =>
  error instanceof NotFound ||
  error instanceof NoSuchKey ||
  (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404);

/** At most `limit` bytes of a response body; the rest is not read (the stream is destroyed). */
async function firstBytes(body: unknown, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  const stream = body as AsyncIterable<Uint8Array> & { destroy?: () => void };
  for await (const chunk of stream) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= limit) break; // leaving the loop ends (destroys) the stream
  }
  stream.destroy?.();
  return new Uint8Array(Buffer.concat(chunks).subarray(0, limit));
}

/** RFC 3986 escaping of one path segment or query value, as Signature V4 wants it. */
const escape = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The object store through the AWS SDK v3, pointed at S3 or any S3-compatible store.
 *
 * Presigned PUTs sign Content-Type and Content-Length rather than using a presigned POST policy
 * with content-length-range: the client declares the exact size it will send (size_bytes), a PUT
 * is one plain request from any HTTP client, and an exact signed length is stricter than a range.
 * They sign nothing else: every header signed is one the client must send as signed, and a client
 * holding only the URL sends Content-Type (the one it declared) and Content-Length (any HTTP
 * client does, and S3 requires it on a PUT), nothing more.
 *
 * They are signed by the SDK's own Signature V4 signer (@smithy/signature-v4, with the client's
 * credentials provider) rather than through `getSignedUrl`: the same signature at about 40 µs
 * instead of about 700 µs a URL, since the presigner runs the whole request middleware stack, and
 * no checksum query rides along (the presigner adds a CRC32 of the empty body, which S3 would
 * check against the upload and refuse). Other calls' checksums are asked for only when required.
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
  const signer = new SignatureV4({
    service: 's3',
    region: settings.OBJECT_STORE_REGION,
    credentials: client.config.credentials,
    sha256: NodeSha256,
    uriEscapePath: false, // S3: the path is signed as sent (its segments escaped once, here)
    applyChecksum: false,
  });
  // Where a key's object lives: path-style (`host/bucket/key`) or virtual-hosted (`bucket.host/key`).
  const endpoint = new URL(
    settings.OBJECT_STORE_ENDPOINT ?? `https://s3.${settings.OBJECT_STORE_REGION}.amazonaws.com`,
  );
  const objectUrl = (key: string) => {
    const path = key.split('/').map(escape).join('/');
    return settings.OBJECT_STORE_FORCE_PATH_STYLE
      ? { host: endpoint.host, path: `${endpoint.pathname.replace(/\/$/, '')}/${escape(bucket)}/${path}` }
      : { host: `${bucket}.${endpoint.host}`, path: `${endpoint.pathname.replace(/\/$/, '')}/${path}` };
  };
  /** A presigned URL for `method` on `key` with these headers signed (the host always is). */
  async function presign(method: string, key: string, headers: Record<string, string>, expiresInSeconds: number) {
    const signedAt = new Date();
    const { host, path } = objectUrl(key);
    const signed = await signer.presign(
      {
        method,
        protocol: endpoint.protocol,
        hostname: host.replace(/:\d+$/, ''),
        ...(endpoint.port && { port: Number(endpoint.port) }),
        path,
        query: {},
        // A presigned S3 URL signs no payload (the body is not known when signing): UNSIGNED-PAYLOAD,
        // carried as the X-Amz-Content-Sha256 query parameter.
        headers: { host, ...headers, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
      },
      { expiresIn: expiresInSeconds, signingDate: signedAt },
    );
    const query = Object.entries(signed.query ?? {})
      .map(([name, value]) => `${escape(name)}=${escape(String(value))}`)
      .join('&');
    return {
      url: `${endpoint.protocol}//${host}${path}?${query}`,
      expiresAt: new Date(signedAt.getTime() + expiresInSeconds * 1000),
    };
  }
  return {
    async presignPut({ key, contentType, sizeBytes, expiresInSeconds }) {
      const signed = await presign(
        'PUT',
        key,
        { 'content-type': contentType, 'content-length': String(sizeBytes) },
        expiresInSeconds,
      );
      return { ...signed, headers: { 'Content-Type': contentType } };
    },
    async storeOnce({ key, body, contentType }) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: body,
            ContentType: contentType,
            IfNoneMatch: '*',
            ChecksumSHA256: createHash('sha256').update(body).digest('base64'),
          }),
        );
        return true;
      } catch (error) {
        // 412: the key holds an object. (409, a concurrent conditional write, is thrown: asked again, it is 412.)
        if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 412) return false;
        throw error;
      }
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    presignGet: ({ key, expiresInSeconds }) => presign('GET', key, {}, expiresInSeconds),
    async head(key) {
      try {
        const object = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return {
          sizeBytes: Number(object.ContentLength ?? 0),
          contentType: object.ContentType,
          lastModified: object.LastModified,
        };
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },
    async readStart(key, bytes) {
      try {
        const object = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=0-${bytes - 1}` }),
        );
        // `bytes 0-7/12345`: the whole size after the slash; a store that ignored the range sends all of it.
        const total = /\/(\d+)$/.exec(object.ContentRange ?? '')?.[1];
        return {
          head: object.Body ? await firstBytes(object.Body, bytes) : new Uint8Array(),
          sizeBytes: Number(total ?? object.ContentLength ?? 0),
          contentType: object.ContentType,
          lastModified: object.LastModified,
        };
      } catch (error) {
        if (isMissing(error)) return undefined;
        // 416: the range starts past the end, so the object is empty.
        if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 416)
          return { head: new Uint8Array(), sizeBytes: 0 };
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

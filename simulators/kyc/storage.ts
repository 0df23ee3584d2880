import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:https';
import { listen, shut, simulatorCertificate } from '../server';
import { sameSignature } from '../../providers/kyc/signature';

/**
 * The storage the v2 `upload_url` points at: a presigned PUT on another host (here `localhost`
 * on its own TLS port, where the API is 127.0.0.1), signed as S3's query-string authentication
 * signs (HMAC-SHA1 over the method, content type, expiry and key). A PUT with another content
 * type, another key, a bad signature or after expiry is refused with S3's XML error; a good one
 * answers exactly 200, as the provider's SDK requires, whatever the bytes (the provider reads
 * the zip later).
 */
const BUCKET = 'sim-provider-uploads';
const ACCESS_KEY = 'SIMULATORACCESSKEY';
const LIFETIME_S = 3600;

export async function startUploadStorage(receive: (uploadId: string, zip: Buffer) => void) {
  const secret = randomBytes(20).toString('base64');
  const sign = (key: string, expires: string) =>
    createHmac('sha1', secret).update(`PUT\n\napplication/zip\n${expires}\n/${BUCKET}/${key}`).digest('base64');
  const waiting = new Set<string>();

  const server = createServer(simulatorCertificate(), (req, res) => {
    const refuse = (status: number, code: string, message: string) => {
      req.resume();
      res
        .writeHead(status, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`,
        );
    };
    const url = new URL(req.url ?? '/', 'https://localhost');
    const key = url.pathname.slice(`/${BUCKET}/`.length);
    const uploadId = key.split('/')[0] ?? '';
    const expires = url.searchParams.get('Expires') ?? '';
    if (req.method !== 'PUT' || !url.pathname.startsWith(`/${BUCKET}/`) || !waiting.has(uploadId))
      return refuse(403, 'AccessDenied', 'Access Denied');
    const contentType = req.headers['content-type'] ?? '';
    if (
      url.searchParams.get('AWSAccessKeyId') !== ACCESS_KEY ||
      !sameSignature(sign(key, expires), url.searchParams.get('Signature')) ||
      contentType !== 'application/zip'
    )
      return refuse(
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided.',
      );
    if (!/^\d+$/.test(expires) || Number(expires) * 1000 < Date.now())
      return refuse(403, 'AccessDenied', 'Request has expired');
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      waiting.delete(uploadId);
      receive(uploadId, Buffer.concat(chunks));
      res.writeHead(200, { etag: `"${randomUUID()}"` }).end();
    });
  });
  const port = await listen(server);

  return {
    /** A presigned PUT URL for one upload, valid for an hour. */
    presign(uploadId: string): string {
      waiting.add(uploadId);
      const key = `${uploadId}/selfie.zip`;
      const expires = String(Math.floor(Date.now() / 1000) + LIFETIME_S);
      const query = new URLSearchParams({
        AWSAccessKeyId: ACCESS_KEY,
        Expires: expires,
        Signature: sign(key, expires),
      });
      return `https://localhost:${port}/${BUCKET}/${key}?${query}`;
    },
    clear: () => waiting.clear(),
    close: () => shut(server),
  };
}

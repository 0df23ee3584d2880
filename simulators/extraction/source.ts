import type { IncomingMessage } from 'node:http';
import type { Fetched } from './model';

/**
 * Reading a document's bytes, bounded as Azure bounds them: the request body (413 past its limit,
 * before reading it all when Content-Length already says so) and a urlSource fetched as Azure
 * fetches it (2xx only, at most `maxDocumentBytes`, within `sourceTimeoutMs`).
 */

/** The request body as bytes, or an error with status 413 past `limit`. */
export function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => Object.assign(new Error('request body too large'), { status: 413, expose: true });
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(tooLarge());
      } else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** Fetches a document as Azure does: 2xx only, bounded in size and time. */
export async function fetchSource(url: string, maxDocumentBytes: number, sourceTimeoutMs: number): Promise<Fetched> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), sourceTimeoutMs);
  try {
    const response = await fetch(url, { signal: controller.signal, redirect: 'follow' });
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => {});
      return { ok: false, inner: 'ContentSourceNotAccessible' };
    }
    const declared = Number(response.headers.get('content-length') ?? NaN);
    if (Number.isFinite(declared) && declared > maxDocumentBytes) {
      await response.body.cancel().catch(() => {});
      return { ok: false, inner: 'InvalidContentLength' };
    }
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxDocumentBytes) {
        await reader.cancel().catch(() => {});
        return { ok: false, inner: 'InvalidContentLength' };
      }
      chunks.push(value);
    }
    return {
      ok: true,
      bytes: Buffer.concat(chunks),
      contentType: response.headers.get('content-type')?.slice(0, 200) ?? null,
    };
  } catch {
    return { ok: false, inner: 'ContentSourceNotAccessible' };
  } finally {
    clearTimeout(timer);
  }
}

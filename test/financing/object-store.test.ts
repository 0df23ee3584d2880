import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { createObjectStore } from '../../providers/storage';
import { harness } from '../support/harness';

/** A PUT as a merchant's client sends it: the body, its content type, and the length fetch derives. */
async function put(url: string, contentType: string, body: Buffer) {
  const response = await fetch(url, { method: 'PUT', headers: { 'content-type': contentType }, body });
  return { status: response.status, text: await response.text() };
}

describe('object storage: the local S3-compatible store refuses what S3 refuses on a presigned PUT', () => {
  const store = () => createObjectStore(harness().config);
  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(991, 0x20)]);

  it('the PUT as signed (content type, exact size, key, in time) is stored, and head reads its size and type', async () => {
    const key = `test/${randomUUID()}.pdf`;
    const { url, expiresAt } = await store().presignPut({
      key,
      contentType: 'application/pdf',
      sizeBytes: pdf.length,
      expiresInSeconds: 60,
    });
    assert.ok(expiresAt.getTime() > Date.now() + 50_000);
    assert.doesNotMatch(url, /x-amz-checksum/i, 'no checksum of an empty body in the URL (S3 would refuse the upload)');
    assert.match(url, /X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost&/, 'nothing a plain PUT lacks');
    assert.equal((await put(url, 'application/pdf', pdf)).status, 200);
    const stored = await store().head(key);
    assert.deepEqual([stored?.sizeBytes, stored?.contentType], [pdf.length, 'application/pdf']);
    assert.ok(stored?.lastModified instanceof Date);
    assert.equal(await store().head(`test/${randomUUID()}.pdf`), undefined, 'nothing at another key');
  });

  it('readStart: one ranged GET answers the first bytes (all of a shorter object), the whole size and the content type; nothing at another key', async () => {
    const key = `test/${randomUUID()}.pdf`;
    const { url } = await store().presignPut({
      key,
      contentType: 'application/pdf',
      sizeBytes: pdf.length,
      expiresInSeconds: 60,
    });
    assert.equal((await put(url, 'application/pdf', pdf)).status, 200);
    const start = await store().readStart(key, 8);
    assert.deepEqual(
      [Buffer.from(start!.head).toString('latin1'), start?.sizeBytes, start?.contentType],
      ['%PDF-1.7', pdf.length, 'application/pdf'],
    );
    assert.ok(start?.lastModified instanceof Date);
    const whole = await store().readStart(key, pdf.length + 100);
    assert.ok(Buffer.from(whole!.head).equals(pdf), 'a range past the end answers the whole object');
    assert.equal(await store().readStart(`test/${randomUUID()}.pdf`, 8), undefined, 'nothing at another key');
  });

  it('a second PUT to the same URL within its validity is accepted (a presigned PUT cannot be create-only without a header the client must add): it replaces the object', async () => {
    const key = `test/${randomUUID()}.pdf`;
    const { url, headers } = await store().presignPut({
      key,
      contentType: 'application/pdf',
      sizeBytes: pdf.length,
      expiresInSeconds: 60,
    });
    assert.deepEqual(headers, { 'Content-Type': 'application/pdf' });
    assert.equal((await put(url, 'application/pdf', pdf)).status, 200);
    const other = Buffer.from(pdf);
    other.write('%PDF-1.7\nreplaced', 0, 'latin1');
    const replace = await put(url, 'application/pdf', other);
    assert.equal(replace.status, 200, replace.text);
    const read = await fetch((await store().presignGet({ key, expiresInSeconds: 60 })).url);
    assert.ok(Buffer.from(await read.arrayBuffer()).equals(other), 'the second upload is what the key holds');
  });

  it('storeOnce is create-only: the first copy stays (false, nothing written); remove deletes', async () => {
    const key = `test/${randomUUID()}.pdf`;
    assert.equal(await store().storeOnce({ key, body: pdf, contentType: 'application/pdf' }), true);
    const other = Buffer.from(pdf);
    other.write('%PDF-1.7\nreplaced', 0, 'latin1');
    assert.equal(await store().storeOnce({ key, body: other, contentType: 'image/png' }), false);
    const read = await fetch((await store().presignGet({ key, expiresInSeconds: 60 })).url);
    assert.ok(Buffer.from(await read.arrayBuffer()).equals(pdf), 'the first copy is what the store holds');
    assert.equal(read.headers.get('content-type'), 'application/pdf');
    await store().remove(key);
    assert.equal(await store().head(key), undefined);
    await store().remove(key); // removing nothing is not an error
  });

  it('refused by the store itself (403): another content type, another size (shorter or longer), another key, after expiry', async () => {
    const sign = (key: string, expiresInSeconds = 60) =>
      store().presignPut({ key, contentType: 'application/pdf', sizeBytes: pdf.length, expiresInSeconds });
    const keys = Array.from({ length: 5 }, () => `test/${randomUUID()}.pdf`);
    const wrongType = await put((await sign(keys[0]!)).url, 'image/png', pdf);
    const shorter = await put((await sign(keys[1]!)).url, 'application/pdf', pdf.subarray(1));
    const longer = await put((await sign(keys[2]!)).url, 'application/pdf', Buffer.concat([pdf, pdf]));
    const elsewhere = (await sign(keys[3]!)).url.replace(keys[3]!, `test/${randomUUID()}.pdf`);
    const otherKey = await put(elsewhere, 'application/pdf', pdf);
    const late = (await sign(keys[4]!, 1)).url;
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const expired = await put(late, 'application/pdf', pdf);
    for (const [what, reply] of Object.entries({ wrongType, shorter, longer, otherKey, expired })) {
      assert.equal(reply.status, 403, `${what}: ${reply.text}`);
    }
    assert.match(wrongType.text, /SignatureDoesNotMatch/);
    assert.match(expired.text, /expired/i);
    for (const key of keys) assert.equal(await store().head(key), undefined, `nothing stored at ${key}`);
  });
});

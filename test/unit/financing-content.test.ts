import { strict as assert } from 'node:assert';
import { DOCUMENT_CONTENT_TYPES, SIGNATURE_BYTES, storedDocumentProblem } from '../../domain/financing/content';

const hex = (text: string) => new Uint8Array(Buffer.from(text, 'hex'));
const stored = (contentType: string, head: Uint8Array, sizeBytes = 100) => ({ head, sizeBytes, contentType });

describe('unit: a stored financing document is checked against what was presigned (size, type, signature)', () => {
  it('each accepted content type is recognised by its signature, and only by its own', () => {
    const heads: Record<(typeof DOCUMENT_CONTENT_TYPES)[number], Uint8Array> = {
      'application/pdf': new Uint8Array(Buffer.from('%PDF-1.7\n', 'latin1')),
      'image/jpeg': hex('ffd8ffe000104a46'),
      'image/png': hex('89504e470d0a1a0a'),
    };
    for (const declared of DOCUMENT_CONTENT_TYPES)
      for (const [actual, head] of Object.entries(heads)) {
        const problem = storedDocumentProblem({ contentType: declared, sizeBytes: 100 }, stored(declared, head));
        if (actual === declared) assert.equal(problem, undefined, declared);
        else assert.match(problem ?? '', /first bytes/, `${actual} bytes declared ${declared}`);
      }
    assert.ok(SIGNATURE_BYTES >= 8);
  });

  it('HTML declared image/png, a short object, another size or another stored content type are refused, saying why', () => {
    const html = new Uint8Array(Buffer.from('<!doctype html>', 'latin1'));
    const png = { contentType: 'image/png', sizeBytes: 100 };
    assert.match(storedDocumentProblem(png, stored('image/png', html)) ?? '', /not a PNG/);
    assert.match(storedDocumentProblem(png, stored('image/png', hex('8950'))) ?? '', /not a PNG/);
    assert.match(storedDocumentProblem(png, stored('image/png', hex('89504e470d0a1a0a'), 101)) ?? '', /size/);
    assert.match(storedDocumentProblem(png, stored('text/html', hex('89504e470d0a1a0a'))) ?? '', /text\/html/);
    assert.match(storedDocumentProblem(png, { head: hex('89504e470d0a1a0a'), sizeBytes: 100 }) ?? '', /stored as/);
  });
});

import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { INPUT_LIMITS, inspectJson, parseGuardedJson, scanJson } from '../../api/middleware/input-guard';
import { ServiceError } from '../../domain/errors';

/** What parseGuardedJson answers for a text: the value, or the refusal's invalid_params. */
function guarded(text: string): { value: unknown } | { refused: unknown } {
  try {
    return { value: parseGuardedJson(text) };
  } catch (error) {
    assert.ok(error instanceof ServiceError);
    return { refused: error.invalidParams };
  }
}

describe('input guard: a JSON body is scanned once, and walked only when it could hold what is refused', () => {
  it('a plain body needs no walk; a \\u escape, a reserved name or an odd character does', () => {
    const plain = '{"account_id":"a1","amount":{"value":100,"currency":"KES"},"note":"a \\"quoted\\" \\\\ back"}';
    assert.deepEqual(scanJson(plain, INPUT_LIMITS.jsonDepth), { tooDeep: false, needsInspection: false });
    for (const text of [
      '{"a":"\\u0000"}',
      '{"a":"\\ud800"}',
      '{"\\u005f_proto__":1}',
      '{"constructor":1}',
      '{"a":"prototype"}',
      '{"a":"\u0000"}',
      '{"a":"\ud800"}',
    ])
      assert.equal(scanJson(text, INPUT_LIMITS.jsonDepth).needsInspection, true, text);
    // An escaped backslash before a "u" is not an escape of a code unit.
    assert.equal(scanJson('{"a":"\\\\u0000"}', INPUT_LIMITS.jsonDepth).needsInspection, false);
  });

  it('nesting past the limit is refused before parsing; brackets inside strings do not count', () => {
    const deep = '['.repeat(INPUT_LIMITS.jsonDepth + 1) + ']'.repeat(INPUT_LIMITS.jsonDepth + 1);
    assert.equal(scanJson(deep, INPUT_LIMITS.jsonDepth).tooDeep, true);
    assert.equal(scanJson(`{"a":"${'['.repeat(100)}"}`, INPUT_LIMITS.jsonDepth).tooDeep, false);
    assert.deepEqual(guarded(deep), {
      refused: [{ path: 'body', reason: `nested deeper than ${INPUT_LIMITS.jsonDepth} levels`, sub_code: 'TOO_DEEP' }],
    });
  });

  it('refuses exactly what a walk of every parsed body refuses (NUL, lone surrogates, reserved keys)', () => {
    // Strings drawn from any code units, so NULs, lone surrogates and reserved names all occur.
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 6 }),
      fc.constantFrom('__proto__', 'constructor', 'prototype', '\u0000', '\ud800', '\udc00x', 'ok'),
    );
    const json = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(text, tie('value'), { maxKeys: 4 }),
      ),
    }));
    fc.assert(
      fc.property(json.value, (value) => {
        const body = JSON.stringify(value);
        const walked = inspectJson(JSON.parse(body));
        const answer = guarded(body);
        if (walked.length === 0) assert.ok('value' in answer, body);
        else assert.deepEqual(answer, { refused: walked.slice(0, INPUT_LIMITS.problems) }, body);
      }),
      { numRuns: 2_000 },
    );
  });
});

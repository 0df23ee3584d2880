import { strict as assert } from 'node:assert';
import { call } from '../support/http';

const ID = '7f1c8e2a-3b4d-4c5e-8f60-718293a4b5c6';
const VALID = { name: 'ok', kind: 'A' };
const kyc = (p: string) => `/v1/kyc/__test__${p}`;
const accounts = (p: string) => `/v1/accounts/__test__${p}`;

/** Asserts the validation error shape of spec section 7, with exactly these keys. */
function assertValidationShape(body: Record<string, unknown>, code: string) {
  assert.deepEqual(Object.keys(body).sort(), ['code', 'description', 'identifier', 'invalid_params']);
  assert.equal(body.code, code);
  assert.equal(typeof body.description, 'string');
  assert.equal(typeof body.identifier, 'string');
  assert.ok(Array.isArray(body.invalid_params));
}

/** Asserts the plain error shape of spec section 7, with exactly these keys. */
function assertPlainShape(body: Record<string, unknown>, code: string) {
  assert.deepEqual(Object.keys(body).sort(), ['code', 'description']);
  assert.equal(body.code, code);
  assert.equal(typeof body.description, 'string');
}

describe('spec 7: error shapes over HTTP', () => {
  describe('validation family (KYC, financing, internal endpoints)', () => {
    it('lists every offending field of path, query, header and body with a sub_code', async () => {
      const reply = await call('POST', `${kyc('/echo/not-a-uuid')}?size=500`, {
        headers: { 'Idempotency-Key': 'k'.repeat(256) },
        json: { name: 'x'.repeat(11), kind: 'Z', amount: { currency: 'KES' } },
      });
      assert.equal(reply.status, 400);
      assertValidationShape(reply.body, 'INVALID_PARAMS');
      assert.equal(reply.body.identifier, reply.headers.get('x-request-id'));
      const byPath = Object.fromEntries(
        reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]),
      );
      assert.deepEqual(byPath, {
        'path.id': 'INVALID_UUID',
        'query.size': 'OUT_OF_RANGE',
        'header.idempotency-key': 'TOO_LONG',
        'body.name': 'TOO_LONG',
        'body.kind': 'INVALID_ENUM',
        'body.amount.value': 'REQUIRED',
      });
      for (const param of reply.body.invalid_params) assert.ok(param.reason.length > 0);
    });

    it('rejects unknown body fields, one entry each, rather than dropping them', async () => {
      const reply = await call('POST', kyc(`/echo/${ID}`), {
        json: { ...VALID, extra: 1, amount: { value: 1, currency: 'KES', fx: 2 } },
      });
      assert.equal(reply.status, 400);
      assertValidationShape(reply.body, 'INVALID_PARAMS');
      assert.deepEqual(
        reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]).sort(),
        [
          ['body.amount.fx', 'UNKNOWN_FIELD'],
          ['body.extra', 'UNKNOWN_FIELD'],
        ],
      );
    });

    it('accepts a valid request and hands the handler parsed values', async () => {
      const reply = await call('POST', `${kyc(`/echo/${ID}`)}?size=5`, { json: VALID });
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, { params: { id: ID }, query: { size: 5 }, body: VALID });
    });

    it('answers a missing body as body REQUIRED', async () => {
      const reply = await call('POST', kyc(`/echo/${ID}`));
      assert.equal(reply.status, 400);
      assert.deepEqual(reply.body.invalid_params, [{ path: 'body', reason: 'required', sub_code: 'REQUIRED' }]);
    });

    it('answers malformed JSON with INVALID_PARAMS naming the body', async () => {
      const reply = await call('POST', kyc(`/echo/${ID}`), { raw: '{"name": ', contentType: 'application/json' });
      assert.equal(reply.status, 400);
      assertValidationShape(reply.body, 'INVALID_PARAMS');
      assert.deepEqual(
        reply.body.invalid_params.map((p: { sub_code: string }) => p.sub_code),
        ['MALFORMED_JSON'],
      );
    });

    it('answers a wrong Content-Type with 415 in the validation shape', async () => {
      const reply = await call('POST', kyc(`/echo/${ID}`), {
        raw: 'name=ok',
        contentType: 'application/x-www-form-urlencoded',
      });
      assert.equal(reply.status, 415);
      assertValidationShape(reply.body, 'UNSUPPORTED_MEDIA_TYPE');
      assert.deepEqual(reply.body.invalid_params, []);
    });

    it('answers an unknown route with 404 and empty invalid_params', async () => {
      const reply = await call('GET', '/v1/kyc/applications-that-do-not-exist');
      assert.equal(reply.status, 404);
      assertValidationShape(reply.body, 'NOT_FOUND');
      assert.deepEqual(reply.body.invalid_params, []);
    });

    it('answers the internal prefixes in the validation shape too', async () => {
      for (const path of [
        '/v1/internal/nothing-here',
        '/api/internal/kyc/nothing-here',
        '/v1/financing/nothing-here',
      ]) {
        const reply = await call('GET', path);
        assert.equal(reply.status, 404, path);
        assertValidationShape(reply.body, 'NOT_FOUND');
      }
    });

    it('answers a wrong method with 405', async () => {
      const reply = await call('DELETE', kyc(`/echo/${ID}`));
      assert.equal(reply.status, 405);
      assertValidationShape(reply.body, 'METHOD_NOT_ALLOWED');
    });

    it('answers an over-size body with 413', async () => {
      const reply = await call('POST', kyc(`/echo/${ID}`), { json: { ...VALID, name: 'x'.repeat(200 * 1024) } });
      assert.equal(reply.status, 413);
      assertValidationShape(reply.body, 'PAYLOAD_TOO_LARGE');
    });

    it('gives verification routes the larger body limit for base64 images', async () => {
      const image = Buffer.alloc(3 * 1024 * 1024, 7).toString('base64');
      const reply = await call('POST', '/v1/kyc/__test__/upload', { json: { selfie: image } });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.bytes, 3 * 1024 * 1024);
    });

    it('answers an unexpected exception with INTERNAL_SERVER_ERROR and the request id, never a stack', async () => {
      const reply = await call('GET', kyc('/crash'), { headers: { 'X-Request-Id': 'crash-check-1' } });
      assert.equal(reply.status, 500);
      assertValidationShape(reply.body, 'INTERNAL_SERVER_ERROR');
      assert.equal(reply.body.identifier, 'crash-check-1');
      assert.doesNotMatch(reply.text, /hunter2|at .*\.ts|stack/);
    });
  });

  describe('plain family (loan, transaction, installment, agent, account, token endpoints)', () => {
    it('answers field failures as BAD_REQUEST naming every offending field', async () => {
      const reply = await call('POST', `${accounts('/echo/nope')}?size=0`, { json: { kind: 'A', extra: true } });
      assert.equal(reply.status, 400);
      assertPlainShape(reply.body, 'BAD_REQUEST');
      for (const field of ['path.id', 'query.size', 'body.name', 'body.extra']) {
        assert.match(reply.body.description, new RegExp(field.replace('.', '\\.')));
      }
    });

    it('answers malformed JSON with BAD_REQUEST', async () => {
      const reply = await call('POST', accounts(`/echo/${ID}`), { raw: '[1,', contentType: 'application/json' });
      assert.equal(reply.status, 400);
      assertPlainShape(reply.body, 'BAD_REQUEST');
    });

    it('answers a wrong Content-Type with 415', async () => {
      const reply = await call('POST', accounts(`/echo/${ID}`), { raw: '<a/>', contentType: 'text/xml' });
      assert.equal(reply.status, 415);
      assertPlainShape(reply.body, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('answers an over-size body with 413', async () => {
      const reply = await call('POST', accounts(`/echo/${ID}`), { json: { ...VALID, name: 'x'.repeat(200 * 1024) } });
      assert.equal(reply.status, 413);
      assertPlainShape(reply.body, 'PAYLOAD_TOO_LARGE');
    });

    it('answers an unknown route with 404', async () => {
      const reply = await call('GET', '/v1/transactions/nothing/here');
      assert.equal(reply.status, 404);
      assertPlainShape(reply.body, 'NOT_FOUND');
    });

    it('answers an unexpected exception with INTERNAL_SERVER_ERROR and the request id, never a stack', async () => {
      const reply = await call('GET', accounts('/crash'), { headers: { 'X-Request-Id': 'crash-check-2' } });
      assert.equal(reply.status, 500);
      assertPlainShape(reply.body, 'INTERNAL_SERVER_ERROR');
      assert.equal(reply.headers.get('x-request-id'), 'crash-check-2');
      assert.match(reply.body.description, /crash-check-2/);
      assert.doesNotMatch(reply.text, /hunter2|at .*\.ts|stack/);
    });
  });

  describe('request id', () => {
    it('echoes a well-formed X-Request-Id', async () => {
      const reply = await call('GET', '/healthz', { headers: { 'X-Request-Id': 'abc-123' } });
      assert.equal(reply.headers.get('x-request-id'), 'abc-123');
    });

    it('replaces a malformed X-Request-Id with a fresh one', async () => {
      const reply = await call('GET', '/healthz', { headers: { 'X-Request-Id': 'bad id with spaces' } });
      assert.match(reply.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    });
  });
});

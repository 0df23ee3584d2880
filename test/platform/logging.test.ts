import { strict as assert } from 'node:assert';
import { Writable } from 'node:stream';
import { buildApp } from '../../api/app';
import { startApi } from '../../api/server';
import { createLogger } from '../../config/logger';
import { harness } from '../support/harness';
import { logLines } from '../support/log-lines';
import { call } from '../support/http';
import { testRoutes } from '../support/test-routes';

describe('structured access logs', () => {
  it('writes one JSON line per request with the request id, and never a token, an OTP or an image', async () => {
    const { lines, sink } = logLines();
    const logger = createLogger('info', sink);
    const api = await startApi(buildApp({ ...harness().deps, logger }, { extraRoutes: testRoutes() }), '127.0.0.1', 0);
    const secret = 'eyJhbGciOiJSUzI1NiJ9.secret-token-payload.signature';
    try {
      await call('POST', '/v1/kyc/__test__/echo/7f1c8e2a-3b4d-4c5e-8f60-718293a4b5c6?otp_code=123456', {
        baseUrl: api.url,
        headers: { Authorization: `Bearer ${secret}`, 'X-Request-Id': 'log-check-1' },
        json: { name: 'ok', kind: 'A', selfie: 'iVBORw0KGgoAAAANSUhEUg' },
      });
      await call('GET', '/v1/accounts/__test__/crash', {
        baseUrl: api.url,
        headers: { 'X-Request-Id': 'log-check-2' },
      });
    } finally {
      await api.close();
    }
    const entries = lines.map((line) => JSON.parse(line));
    const access = entries.find((e) => e.msg === 'request' && e.req_id === 'log-check-1');
    assert.ok(access, 'an access log line for the request');
    assert.equal(access.method, 'POST');
    assert.equal(access.status, 400);
    assert.equal(access.path, '/v1/kyc/__test__/echo/7f1c8e2a-3b4d-4c5e-8f60-718293a4b5c6');
    assert.equal(typeof access.duration_ms, 'number');
    const crash = entries.find((e) => e.msg === 'unhandled error' && e.req_id === 'log-check-2');
    assert.ok(crash, 'the unexpected error is logged with its request id');
    const all = lines.join('\n');
    for (const leaked of [secret, '123456', 'iVBORw0KGgo', 'Bearer'])
      assert.ok(!all.includes(leaked), `${leaked} must not be logged`);
  });

  it('never logs the token of a callback URL, on a matched route or a near miss (another method, another suffix)', async () => {
    const { lines, sink } = logLines();
    const api = await startApi(
      buildApp({ ...harness().deps, logger: createLogger('info', sink) }, { extraRoutes: testRoutes() }),
      '127.0.0.1',
      0,
    );
    const token = 'tOkEn-that-must-never-be-logged_0123456789';
    const base = `/v1/transactions/mobilemoney/callbacks`;
    const id = '7f1c8e2a-3b4d-4c5e-8f60-718293a4b5c6';
    try {
      await call('POST', `${base}/stk/${id}/${token}`, { baseUrl: api.url, json: {} });
      await call('GET', `${base}/stk/${id}/${token}`, { baseUrl: api.url });
      await call('POST', `${base}/b2c/${id}/${token}/results`, { baseUrl: api.url, json: {} });
      await call('POST', `${base}/b2c/${id}/${token}%00/result`, { baseUrl: api.url, json: {} });
      // The routers match past the area in any case: so does the masking.
      await call('POST', `/v1/transactions/MobileMoney/CALLBACKS/stk/${id}/${token}`, { baseUrl: api.url, json: {} });
      await call('POST', `/v1/current-account/Callbacks/sms/delivery-reports/${token}`, {
        baseUrl: api.url,
        json: {},
      });
    } finally {
      await api.close();
    }
    const paths = lines
      .map((line) => JSON.parse(line))
      .filter((e) => e.msg === 'request')
      .map((e) => e.path);
    assert.equal(paths.length, 6);
    for (const path of paths) assert.match(path, /\/\[token\]/);
    assert.ok(!lines.join('\n').includes('tOkEn-that'), 'the token appears nowhere');
  });

  it('redacts secret-named fields if code ever hands them to the logger', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _e, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    logger.info(
      { authorization: 'Bearer abc', body: { otp_code: '999111', selfie: 'AAAA' }, refresh_token: 'r1' },
      'oops',
    );
    const text = lines.join('');
    for (const leaked of ['Bearer abc', '999111', 'AAAA', 'r1"']) assert.ok(!text.includes(leaked), leaked);
  });
});

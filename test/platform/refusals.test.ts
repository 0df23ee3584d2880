import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { buildApp } from '../../api/app';
import { createApiKey } from '../../api/auth/api-keys';
import { startApi } from '../../api/server';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { assertDeprecated, call } from '../support/http';
import { applicantHeaders, newApplicant, newApplication } from '../support/kyc';
import { testRoutes } from '../support/test-routes';
import { backendToken, bearer } from '../support/tokens';

/** The answer to a request whose headers are sent, and whose body is only begun. */
function answerWhileSending(
  path: string,
  headers: Record<string, string>,
  declaredBytes: number,
  sentBytes: number,
): Promise<{ status: number; body: string; sent: number }> {
  const url = new URL(harness().baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(declaredBytes) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode!, body, sent: sentBytes });
          req.destroy();
        });
      },
    );
    req.on('error', (error) =>
      String(error).includes('ECONNRESET') || String(error).includes('EPIPE') ? undefined : reject(error),
    );
    req.write(`{"channel":"server_upload","selfie":"${'A'.repeat(sentBytes)}`);
    // The rest of the declared body is never sent: an answer can only come from before the parser.
  });
}

/** Raw request with one huge header: Node's parser refuses it before Koa sees it. */
function withHugeHeader(
  path: string,
  bytes: number,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const url = new URL(harness().baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: 'GET',
        path,
        headers: { Authorization: `Bearer ${'a'.repeat(bytes)}` },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('attack run, finding 5: large bodies are read only after authorization', () => {
  it('a caller without kyc.write is refused 403 before one byte of a 19 MB verification body is parsed', async () => {
    const agent = bearer(await backendToken(DEMO.users.agent.id)); // AGENT holds no kyc.write
    const reply = await answerWhileSending(
      `/v1/kyc/applications/${randomUUID()}/verification`,
      agent,
      19 * 1024 * 1024,
      64 * 1024,
    );
    assert.equal(reply.status, 403, reply.body);
    const body = JSON.parse(reply.body);
    assert.equal(body.code, 'FORBIDDEN');
    assert.ok(body.identifier, 'validation family shape');
  });

  it('a caller with the permission gets its large body read and validated as before', async () => {
    const user = await newApplicant();
    const id = await newApplication(user);
    const reply = await call('POST', `/v1/kyc/applications/${id}/verification`, {
      headers: await applicantHeaders(user),
      json: {
        channel: 'server_upload',
        id_type: 'IDENTITY_CARD',
        selfie: 'A'.repeat(2_000_000),
        document_front: '!',
        consent: true,
      },
    });
    assert.equal(reply.status, 400);
    assert.ok(reply.body.invalid_params.some((p: { path: string }) => p.path === 'body.document_front'));
  });
});

describe('attack run, finding 6: every refusal is the same everywhere', () => {
  it('a valid credential of a scheme the route does not take is 401 with WWW-Authenticate', async () => {
    const { key } = await createApiKey(harness().db, { organizationId: DEMO.organizations.demo.id });
    for (const [method, path] of [
      ['POST', '/v1/kyc/applications'],
      ['POST', '/v1/transactions/mobilemoney/stk-push'],
    ] as const) {
      const reply = await call(method, path, { headers: bearer(key), json: {} });
      assert.equal(reply.status, 401, `${path}: ${reply.text}`);
      assert.equal(reply.headers.get('www-authenticate'), 'Bearer error="invalid_token"', path);
    }
    const anonymous = await call('GET', '/v1/auth/whoami');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer', 'no credentials presented: the scheme, no error');
  });

  it("an Authorization header over 16 kB gets 431 with a body in the route family shape, not Node's empty answer", async () => {
    const plain = await withHugeHeader('/v1/transactions/abc', 20_000);
    assert.equal(plain.status, 431);
    assert.deepEqual(JSON.parse(plain.body), {
      code: 'HEADERS_TOO_LARGE',
      description: 'Request Header Fields Too Large',
    });
    const validation = await withHugeHeader(`/v1/kyc/applications/${randomUUID()}/status`, 20_000);
    assert.equal(validation.status, 431);
    const body = JSON.parse(validation.body);
    assert.equal(body.code, 'HEADERS_TOO_LARGE');
    assert.deepEqual(body.invalid_params, []);
    assert.equal(body.identifier, validation.headers['x-request-id']);
    // A request line longer than what the parser kept (found by npm run fuzz): the family still
    // follows from the path.
    const longLine = await withHugeHeader(
      `/v1/kyc/applications/${'a'.repeat(10_000)}/status?x=${'b'.repeat(7_000)}`,
      10,
    );
    assert.equal(longLine.status, 431);
    assert.deepEqual(JSON.parse(longLine.body).invalid_params, []);
    // Between our own limit and Node's: refused as a credential, 401 in shape.
    const large = await withHugeHeader('/v1/transactions/abc', 10_000);
    assert.equal(large.status, 401);
    assert.ok(large.headers['www-authenticate']);
  });

  it('__proto__ and constructor keys are refused as reserved keys, not as malformed JSON', async () => {
    const reply = await call('POST', '/v1/kyc/__test__/echo/00000000-0000-4000-8000-000000000000', {
      raw: '{"name":"a","kind":"A","nested":{"__proto__":{"admin":true}},"constructor":1}',
      contentType: 'application/json',
    });
    assert.equal(reply.status, 400);
    assert.deepEqual(
      reply.body.invalid_params.map((p: { path: string; sub_code: string }) => [p.path, p.sub_code]).sort(),
      [
        ['body.constructor', 'RESERVED_KEY'],
        ['body.nested.__proto__', 'RESERVED_KEY'],
      ],
    );
  });

  it('the failed-authentication budget also counts per target across addresses: ten addresses cannot keep guessing one API key, whose holder goes on', async () => {
    const { deps, db } = harness();
    const api = await startApi(
      buildApp(
        { ...deps, config: { ...deps.config, TRUST_PROXY: true, RATE_LIMIT_AUTH_FAILURE_POINTS: 5 } },
        { extraRoutes: testRoutes() },
      ),
      '127.0.0.1',
      0,
    );
    try {
      const { key } = await createApiKey(db, { organizationId: DEMO.organizations.demo.id });
      assert.equal(
        (await call('GET', '/v1/auth/whoami', { baseUrl: api.url, headers: bearer(key) })).status,
        200,
        'verified before the attack',
      );
      // Guesses sharing the key's prefix (its target), each from another address.
      const statuses = [];
      for (let i = 0; i < 10; i++) {
        const guess = `${key.slice(0, 10)}${randomUUID().replace(/-/g, '')}`;
        statuses.push(
          (
            await call('GET', '/v1/auth/whoami', {
              baseUrl: api.url,
              headers: { ...bearer(guess), 'X-Forwarded-For': `203.0.113.${i + 1}` },
            })
          ).status,
        );
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429, 429, 429]);
      assert.equal(
        (await call('GET', '/v1/auth/whoami', { baseUrl: api.url, headers: bearer(key) })).status,
        200,
        'the key verified earlier goes on',
      );
      const { key: other } = await createApiKey(db, { organizationId: DEMO.organizations.demo.id });
      assert.equal(
        (await call('GET', '/v1/auth/whoami', { baseUrl: api.url, headers: bearer(other) })).status,
        200,
        'another key is not affected',
      );
    } finally {
      await api.close();
    }
  });

  it('tokens that name a user but fail verification do not lock her out (a subject is unverified: no lockout is keyed on it)', async () => {
    const { deps } = harness();
    const api = await startApi(
      buildApp(
        { ...deps, config: { ...deps.config, RATE_LIMIT_AUTH_FAILURE_POINTS: 5 } },
        { extraRoutes: testRoutes() },
      ),
      '127.0.0.1',
      0,
    );
    try {
      const user = await newApplicant();
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      for (let i = 0; i < 4; i++) {
        const forged = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iss: deps.config.AUTH_ISSUER, sub: user.id })}.AAAA`;
        assert.equal(
          (
            await call('GET', '/v1/auth/whoami', {
              baseUrl: api.url,
              headers: { ...bearer(forged), 'X-Forwarded-For': `198.51.100.${i}` },
            })
          ).status,
          401,
        );
      }
      assert.equal(
        (await call('GET', '/v1/auth/whoami', { baseUrl: api.url, headers: bearer(await backendToken(user.id)) }))
          .status,
        200,
        'her fresh token works',
      );
    } finally {
      await api.close();
    }
  });

  it('with TRUST_PROXY only the entries our proxies appended count: a client cannot pick its address with X-Forwarded-For', async () => {
    const { deps } = harness();
    const api = await startApi(
      buildApp(
        {
          ...deps,
          config: {
            ...deps.config,
            TRUST_PROXY: true,
            TRUST_PROXY_HOPS: 1,
            MOBILE_MONEY_CALLBACK_SOURCES: ['196.201.214.0/24'],
          },
        },
        { extraRoutes: testRoutes() },
      ),
      '127.0.0.1',
      0,
    );
    try {
      const path = `/v1/transactions/mobilemoney/callbacks/stk/${randomUUID()}/token`;
      // The client claims a provider address first; the proxy (here: none, the socket) appends the real one.
      const spoofed = await call('POST', path, {
        baseUrl: api.url,
        json: {},
        headers: { 'X-Forwarded-For': '196.201.214.7, 203.0.113.9' },
      });
      assert.equal(spoofed.status, 403, "the address our proxy saw (203.0.113.9) is not the provider's");
      const honest = await call('POST', path, {
        baseUrl: api.url,
        json: {},
        headers: { 'X-Forwarded-For': '203.0.113.9, 196.201.214.7' },
      });
      assert.equal(honest.status, 404, 'the provider address our proxy appended passes the allow-list');
    } finally {
      await api.close();
    }
  });
});

describe('attack run, finding 7: deprecated operations and channels announce it on every answer, errors included', () => {
  it('the capture and session aliases carry Deprecation, Sunset and the successor Link on 401 and 400 as on success', async () => {
    const id = randomUUID();
    const successor = `/v1/kyc/applications/${id}/verification`;
    const unauthenticated = await call('POST', `${successor}/capture`, { json: {} });
    assert.equal(unauthenticated.status, 401);
    assertDeprecated(unauthenticated, successor);
    const headers = await applicantHeaders(await newApplicant());
    const invalid = await call('POST', `${successor}/session`, { headers, json: { unknown: true } });
    assert.equal(invalid.status, 400);
    assertDeprecated(invalid, successor);
    const notFound = await call('GET', `${successor}/capture`, { headers });
    assert.equal(notFound.status, 404);
    assertDeprecated(notFound, successor);
  });

  it('the legacy web_sdk channel carries them on its errors too (a refusal once the body names the channel)', async () => {
    const headers = await applicantHeaders(await newApplicant());
    const reply = await call('POST', `/v1/kyc/applications/${randomUUID()}/verification`, {
      headers,
      json: { channel: 'web_sdk', consent: true },
    });
    assert.equal(reply.status, 404);
    assertDeprecated(reply);
    const current = await call('POST', `/v1/kyc/applications/${randomUUID()}/verification`, {
      headers,
      json: { channel: 'provider_sdk', consent: true },
    });
    assert.equal(current.headers.get('deprecation'), null);
  });
});

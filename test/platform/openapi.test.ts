import { strict as assert } from 'node:assert';
import { harness } from '../support/harness';
import { call } from '../support/http';

describe('OpenAPI document and reference page', () => {
  it('documents every route the router serves, with its method', async () => {
    const reply = await call('GET', '/openapi.json');
    assert.equal(reply.status, 200);
    assert.equal(reply.body.openapi, '3.1.0');
    const missing = harness()
      .routes.filter((route) => !reply.body.paths?.[route.path]?.[route.method])
      .map((route) => `${route.method.toUpperCase()} ${route.path}`);
    assert.deepEqual(missing, []);
    const documented = Object.values(reply.body.paths as Record<string, object>).reduce(
      (n, operations) => n + Object.keys(operations).length,
      0,
    );
    assert.equal(documented, harness().routes.length, 'no operation is documented that is not served');
  });

  it('documents per operation the errors it can really return, each code in its family shape, and no catch-all default', async () => {
    const { body } = await call('GET', '/openapi.json');
    const kyc = body.paths['/v1/kyc/__test__/echo/{id}'].post.responses;
    const plain = body.paths['/v1/accounts/__test__/echo/{id}'].post.responses;
    assert.equal(kyc['400'].content['application/json'].schema.$ref, '#/components/schemas/ValidationError');
    assert.match(kyc['400'].description, /`INVALID_PARAMS`/);
    assert.equal(plain['400'].content['application/json'].schema.$ref, '#/components/schemas/Error');
    assert.match(plain['400'].description, /`BAD_REQUEST`/);
    assert.deepEqual(body.components.schemas.ValidationError.required.sort(), [
      'code',
      'description',
      'identifier',
      'invalid_params',
    ]);
    for (const [path, operations] of Object.entries(
      body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>,
    )) {
      for (const [method, operation] of Object.entries(operations)) {
        assert.equal(operation.responses.default, undefined, `${method} ${path} has a catch-all default`);
        for (const status of ['400', '431', '500'])
          assert.ok(operation.responses[status], `${method} ${path} documents ${status}`);
      }
    }
    // What the money-moving POST's declaration implies, and what its handler declares.
    const push = body.paths['/v1/transactions/mobilemoney/stk-push'].post.responses;
    assert.match(push['401'].description, /`UNAUTHORISED`/);
    assert.ok(push['401'].headers['WWW-Authenticate']);
    assert.match(push['403'].description, /`WAITING_LIST`/);
    assert.match(push['409'].description, /`IDEMPOTENCY_KEY_REUSED`.*`IDEMPOTENCY_REQUEST_IN_PROGRESS`/);
    assert.ok(push['429'].headers['Retry-After']);
    assert.match(push['400'].description, /INSUFFICIENT_FUNDS/);
    assert.equal(push['404'], undefined, 'no error it cannot return');
    assert.match(body.paths['/v1/transactions/{id}'].get.responses['404'].description, /`NOT_FOUND`/);
  });

  it('documents the partner exchange with its body and the partner JWT as its security scheme', async () => {
    const { body } = await call('GET', '/openapi.json');
    const exchange = body.paths['/v1/auth/exchange'].post;
    assert.deepEqual(exchange.security, [{ partnerJwt: [] }]);
    assert.equal(body.components.securitySchemes.partnerJwt.scheme, 'bearer');
    assert.ok(exchange.requestBody.content['application/json'].schema);
    assert.match(exchange.responses['401'].description, /partner JWT/);
  });

  it('documents one success status per deprecated alias, and marks every deprecated operation', async () => {
    const { body } = await call('GET', '/openapi.json');
    const successes = (operation: { responses: Record<string, unknown> }) =>
      Object.keys(operation.responses).filter((status) => status.startsWith('2'));
    const capture = body.paths['/v1/kyc/applications/{id}/verification/capture'];
    const session = body.paths['/v1/kyc/applications/{id}/verification/session'].post;
    assert.deepEqual(successes(capture.post), ['202']);
    assert.deepEqual(successes(session), ['201']);
    for (const operation of [capture.post, capture.get, session]) assert.equal(operation.deprecated, true);
    assert.deepEqual(successes(body.paths['/v1/kyc/applications/{id}/verification'].post).sort(), ['201', '202']);
  });

  it('describes request parts from the same zod schemas the router validates with', async () => {
    const { body } = await call('GET', '/openapi.json');
    const operation = body.paths['/v1/kyc/__test__/echo/{id}'].post;
    const names = operation.parameters.map((p: { in: string; name: string }) => `${p.in}:${p.name}`).sort();
    assert.deepEqual(names, ['header:idempotency-key', 'path:id', 'query:size']);
    const schema = operation.requestBody.content['application/json'].schema;
    assert.equal(schema.additionalProperties, false, 'unknown body fields are documented as refused');
  });

  it('serves a reference page whose assets come from the service, not a CDN', async () => {
    const page = await call('GET', '/docs');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(assets.length >= 2);
    for (const asset of assets) {
      assert.ok(asset.startsWith('/docs/assets/'), `${asset} is served locally`);
      const reply = await fetch(`${harness().baseUrl}${asset}`);
      assert.equal(reply.status, 200, asset);
      assert.ok((await reply.arrayBuffer()).byteLength > 0);
    }
  });
});

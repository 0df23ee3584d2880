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

  it('documents each family error shape as the default response', async () => {
    const { body } = await call('GET', '/openapi.json');
    const kyc = body.paths['/v1/kyc/__test__/echo/{id}'].post.responses.default.content['application/json'].schema;
    const plain = body.paths['/v1/accounts/__test__/echo/{id}'].post.responses.default.content['application/json'].schema;
    assert.equal(kyc.$ref, '#/components/schemas/ValidationError');
    assert.equal(plain.$ref, '#/components/schemas/Error');
    assert.deepEqual(body.components.schemas.ValidationError.required.sort(), ['code', 'description', 'identifier', 'invalid_params']);
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

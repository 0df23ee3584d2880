import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '../../api/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { backendToken, bearer } from '../support/tokens';
import { adminHeaders, registerEndpoint, removeEndpoints, type Registered } from '../support/webhooks';

describe('webhook endpoints', () => {
  const made: Registered[] = [];
  after(() => removeEndpoints(made));

  it('an endpoint is created with a Standard Webhooks secret shown once, then read, changed and deleted', async () => {
    const headers = await adminHeaders();
    const endpoint = await registerEndpoint(['transaction.posted']);
    assert.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const read = await call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, { headers });
    assert.equal(read.status, 200);
    assert.equal(read.body.secret, undefined, 'the secret is shown only at creation');
    assert.deepEqual(read.body.event_types, ['transaction.posted']);
    const listed = await call('GET', '/v1/webhooks/endpoints', { headers });
    assert.ok(listed.body.data.some((e: { id: string }) => e.id === endpoint.id));

    const changed = await call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, {
      headers,
      json: { event_types: ['transaction.posted', 'transaction.failed'], enabled: false },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.enabled, false);
    assert.equal(changed.body.disabled_reason, 'disabled by the organization');
    const enabled = await call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { headers, json: { enabled: true } });
    assert.equal(enabled.body.disabled_reason, null);

    assert.equal((await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { headers })).status, 204);
    assert.equal((await call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, { headers })).status, 404);
  });

  it('a rotation answers a new secret and keeps signing with the old one for the grace period', async () => {
    const headers = await adminHeaders();
    const endpoint = await registerEndpoint(['transaction.posted']);
    made.push(endpoint);
    const rotated = await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/secret/rotate`, { headers });
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.secret, endpoint.secret);
    const graceMs = Date.parse(rotated.body.previous_secret_expires_at) - Date.now();
    assert.ok(Math.abs(graceMs - harness().config.WEBHOOK_SECRET_GRACE) < 60_000);
  });

  it('a rotation retried under its Idempotency-Key answers the same secret, not a third one', async () => {
    const headers = { ...(await adminHeaders()), 'Idempotency-Key': randomUUID() };
    const endpoint = await registerEndpoint(['transaction.posted']);
    made.push(endpoint);
    const path = `/v1/webhooks/endpoints/${endpoint.id}/secret/rotate`;
    const first = await call('POST', path, { headers });
    const again = await call('POST', path, { headers });
    assert.equal(first.status, 200, first.text);
    assert.equal(again.body.secret, first.body.secret);
    assert.equal(first.headers.get('cache-control'), 'no-store');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.headers.get('cache-control'), 'no-store', 'the replay carries the secret too');
    const row = await harness().db('webhook_endpoints').where({ id: endpoint.id }).first();
    assert.equal(row.previous_secret, endpoint.secret, 'the original secret keeps its grace');
  });

  it('an answer carrying a secret is Cache-Control: no-store: the creation, and its replay under the same Idempotency-Key', async () => {
    const name = `r-${randomUUID()}`;
    const headers = { ...(await adminHeaders()), 'Idempotency-Key': randomUUID() };
    const json = { url: `${harness().webhookReceiver.url}/webhooks/${name}`, event_types: ['transaction.posted'] };
    const created = await call('POST', '/v1/webhooks/endpoints', { headers, json });
    assert.equal(created.status, 201, created.text);
    made.push({ id: created.body.id, name, secret: created.body.secret, url: json.url });
    assert.equal(created.headers.get('cache-control'), 'no-store');
    const replayed = await call('POST', '/v1/webhooks/endpoints', { headers, json });
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.equal(replayed.body.secret, created.body.secret);
    assert.equal(replayed.headers.get('cache-control'), 'no-store');
  });

  it('a platform key manages no organization’s webhooks (403)', async () => {
    const { key } = await createApiKey(harness().db, { platform: true, permissions: ['webhooks.manage'] });
    const reply = await call('GET', '/v1/webhooks/endpoints', { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(reply.status, 403, reply.text);
  });

  it('another organization’s endpoint is 404, and a caller without webhooks.manage is 403', async () => {
    const endpoint = await registerEndpoint(['transaction.posted']);
    made.push(endpoint);
    const { key } = await createApiKey(harness().db, {
      organizationId: DEMO.organizations.second.id,
      permissions: ['webhooks.manage'],
    });
    const other = { Authorization: `Bearer ${key}` };
    for (const [method, path] of [
      ['GET', `/v1/webhooks/endpoints/${endpoint.id}`],
      ['PATCH', `/v1/webhooks/endpoints/${endpoint.id}`],
      ['DELETE', `/v1/webhooks/endpoints/${endpoint.id}`],
      ['POST', `/v1/webhooks/endpoints/${endpoint.id}/secret/rotate`],
      ['GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`],
    ] as const) {
      const reply = await call(method, path, {
        headers: other,
        ...(method === 'PATCH' ? { json: { enabled: false } } : {}),
      });
      assert.equal(reply.status, 404, `${method} ${path}: ${reply.text}`);
    }
    const customer = bearer(await backendToken(DEMO.users.customer.id));
    assert.equal((await call('GET', '/v1/webhooks/endpoints', { headers: customer })).status, 403);
  });

  it('URLs reaching link-local, private or unresolvable addresses, or carrying credentials, are refused', async () => {
    const headers = await adminHeaders();
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[fe80::1]/hook',
      'http://10.0.0.7/hook',
      'http://192.168.1.20/hook',
      'http://[::ffff:10.0.0.7]/hook',
      'http://0.0.0.0:8080/hook',
      `http://user:pass@127.0.0.1:9/hook`,
      `https://${randomUUID()}.invalid/hook`,
    ]) {
      const reply = await call('POST', '/v1/webhooks/endpoints', {
        headers,
        json: { url, event_types: ['transaction.posted'] },
      });
      assert.equal(reply.status, 400, `${url}: ${reply.text}`);
      assert.match(reply.body.description, /body\.url/, url);
    }
    const unknownType = await call('POST', '/v1/webhooks/endpoints', {
      headers,
      json: { url: 'https://example.com/hook', event_types: ['transaction.exploded'] },
    });
    assert.equal(unknownType.status, 400);
  });
});

import { strict as assert } from 'node:assert';
import { randomInt } from 'node:crypto';
import type { Context } from 'koa';
import { buildApp } from '../../api/app';
import { publicBaseUrl } from '../../api/public-url';
import { type RunningApi, startApi } from '../../api/server';
import { activatedCustomer } from '../support/current-account';
import { harness } from '../support/harness';
import { call } from '../support/http';

/**
 * /openapi.json declares a self-service resource's `url`, `confirm_url` and `authorize_url`
 * `format: uri`: absolute. Without PUBLIC_BASE_URL they are made under the request's own origin
 * (with TRUST_PROXY, as the load balancer forwarded it). The harness's API has PUBLIC_BASE_URL
 * (providers call it back), so these run against instances of it without one, every exchange
 * checked against the document as the harness's are.
 */
describe('/openapi.json "format: uri": without PUBLIC_BASE_URL every link is absolute, under the request’s origin', () => {
  const apis: RunningApi[] = [];
  const instance = async (config: Partial<ReturnType<typeof harness>['config']>) => {
    const { deps } = harness();
    const api = await startApi(
      buildApp({ ...deps, config: { ...deps.config, PUBLIC_BASE_URL: undefined, ...config } }),
      '127.0.0.1',
      0,
    );
    apis.push(api);
    return api.url;
  };
  after(async () => {
    await Promise.all(apis.splice(0).map((api) => api.close()));
  });

  const changeOn = (baseUrl: string, headers: Record<string, string>, extra: Record<string, string> = {}) =>
    call('POST', '/v1/user/accounts/current/phone/changes', {
      baseUrl,
      contract: true,
      headers: { ...headers, ...extra },
      json: {
        new_mobile_country_code: '254',
        new_mobile_number: `7${String(randomInt(0, 100_000_000)).padStart(8, '0')}`,
        authorization_channel: 'OLD_MOBILE',
      },
    });

  it('a mobile-number change and an e-mail verification answered by an instance without PUBLIC_BASE_URL link to that instance; X-Forwarded-* is ignored without TRUST_PROXY', async function () {
    this.timeout(60_000);
    const baseUrl = await instance({ TRUST_PROXY: false });
    const customer = await activatedCustomer();
    const forwarded = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'attacker.example' };
    const change = await changeOn(baseUrl, customer.headers, forwarded);
    assert.equal(change.status, 201, change.text);
    const id = change.body.id as string;
    assert.equal(change.body.url, `${baseUrl}/v1/user/accounts/current/phone/changes/${id}`);
    assert.equal(change.body.authorize_url, `${baseUrl}/v1/user/accounts/current/phone/changes/${id}/authorize`);
    assert.equal(change.body.confirm_url, `${baseUrl}/v1/user/accounts/current/phone/changes/${id}/confirm`);
    const read = await call('GET', `/v1/user/accounts/current/phone/changes/${id}`, {
      baseUrl,
      contract: true,
      headers: customer.headers,
    });
    assert.equal(read.body.url, change.body.url);
    const verification = await call('POST', '/v1/user/accounts/current/email/verifications', {
      baseUrl,
      contract: true,
      headers: customer.headers,
    });
    assert.equal(verification.status, 201, verification.text);
    const vid = verification.body.id as string;
    assert.equal(verification.body.url, `${baseUrl}/v1/user/accounts/current/email/verifications/${vid}`);
    assert.equal(verification.body.confirm_url, `${verification.body.url}/confirm`);
  });

  it('behind a load balancer (TRUST_PROXY), the links use the forwarded scheme and host', async function () {
    this.timeout(60_000);
    const baseUrl = await instance({ TRUST_PROXY: true });
    const customer = await activatedCustomer();
    const change = await changeOn(baseUrl, customer.headers, {
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'api.lender.example',
    });
    assert.equal(change.status, 201, change.text);
    assert.equal(
      change.body.url,
      `https://api.lender.example/v1/user/accounts/current/phone/changes/${change.body.id}`,
    );
  });

  it('a Host that is not a host (a path, a query, a user) falls back to the address the API listens on; behind proxies, the forwarded entries our own proxies wrote count', () => {
    const config = {
      PUBLIC_BASE_URL: undefined,
      HOST: '127.0.0.1',
      PORT: 3000,
      TRUST_PROXY: false,
      TRUST_PROXY_HOPS: 1,
    };
    const ctx = (headers: Record<string, string>, protocol = 'http') =>
      ({ protocol, get: (name: string) => headers[name.toLowerCase()] ?? '' }) as unknown as Context;
    const host = (value: string) => ctx({ host: value });
    assert.equal(
      publicBaseUrl(ctx({ host: 'api.lender.example:8443' }, 'https'), config),
      'https://api.lender.example:8443',
    );
    assert.equal(publicBaseUrl(host('API.Lender.Example'), config), 'http://api.lender.example');
    for (const value of ['evil.example/path', 'evil.example?x=1', 'a b', '', 'evil.example#x', 'user@evil.example'])
      assert.equal(publicBaseUrl(host(value), config), 'http://127.0.0.1:3000', value);
    assert.equal(publicBaseUrl(host(''), { ...config, HOST: '0.0.0.0' }), 'http://localhost:3000');
    assert.equal(
      publicBaseUrl(host('evil.example'), { ...config, PUBLIC_BASE_URL: 'https://api.lender.example' }),
      'https://api.lender.example',
    );
    // Two proxies appending: the client's own entry (leftmost) is not believed.
    const forwarded = ctx({
      host: 'internal:3000',
      'x-forwarded-host': 'attacker.example, api.lender.example, lb.internal',
      'x-forwarded-proto': 'http, https, http',
    });
    assert.equal(
      publicBaseUrl(forwarded, { ...config, TRUST_PROXY: true, TRUST_PROXY_HOPS: 2 }),
      'https://api.lender.example',
    );
    assert.equal(publicBaseUrl(forwarded, config), 'http://internal:3000', 'no proxy trusted: the Host');
  });
});

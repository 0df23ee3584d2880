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

  it('a Host that is not a host (a path, a query, a user) falls back to the address the API listens on', () => {
    const config = { PUBLIC_BASE_URL: undefined, HOST: '127.0.0.1', PORT: 3000 };
    const ctx = (host: string, protocol = 'http') => ({ host, protocol }) as Context;
    assert.equal(publicBaseUrl(ctx('api.lender.example:8443', 'https'), config), 'https://api.lender.example:8443');
    assert.equal(publicBaseUrl(ctx('API.Lender.Example'), config), 'http://api.lender.example');
    for (const host of ['evil.example/path', 'evil.example?x=1', 'a b', '', 'evil.example#x'])
      assert.equal(publicBaseUrl(ctx(host), config), 'http://127.0.0.1:3000', host);
    assert.equal(publicBaseUrl(ctx('x', 'gopher'), config), 'http://x');
    assert.equal(
      publicBaseUrl(ctx('evil.example'), { ...config, PUBLIC_BASE_URL: 'https://api.lender.example' }),
      'https://api.lender.example',
    );
  });
});

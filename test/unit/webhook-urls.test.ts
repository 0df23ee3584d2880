import { strict as assert } from 'node:assert';
import { checkUrl } from '../../api/webhooks/endpoints';
import { loadConfig } from '../../config';
import { ServiceError } from '../../domain/errors';

const refusal = async (config: Parameters<typeof checkUrl>[0], url: string) => {
  try {
    await checkUrl(config, url);
    return undefined;
  } catch (error) {
    assert.ok(error instanceof ServiceError);
    return error.invalidParams[0]?.reason;
  }
};

describe('webhook endpoint URLs', () => {
  const production = loadConfig({ NODE_ENV: 'production', WEBHOOK_ALLOWED_ADDRESSES: 'public' });
  const loopback = loadConfig({
    NODE_ENV: 'test',
    WEBHOOK_ALLOWED_ADDRESSES: 'loopback',
    PORT: '3000',
    AUTH_JWKS_URL: 'http://127.0.0.1:3101/backend/jwks',
    DATABASE_URL: 'postgres://postgres@127.0.0.1/lending',
  });

  it('in production an endpoint must be https', async () => {
    assert.equal(await refusal(production, 'http://93.184.216.34/hook'), 'must be https');
    assert.equal(await refusal(production, 'https://93.184.216.34/hook'), undefined);
  });

  it('loopback is refused unless the setting allows it, link-local always', async () => {
    assert.match(String(await refusal(production, 'https://127.0.0.1/hook')), /loopback/);
    assert.equal(await refusal(loopback, 'http://127.0.0.1:3109/webhooks/demo'), undefined);
    assert.equal(await refusal(loopback, 'http://[::1]:3109/webhooks/demo'), undefined, '[::1] is loopback too');
    assert.match(String(await refusal(loopback, 'http://169.254.169.254/')), /link-local/);
  });

  it("the service's own ports (API, metrics, Postgres, Temporal, its providers and simulators) are refused on any address but a public one, whatever the setting", async () => {
    const own = [
      'http://127.0.0.1:3000/v1/auth/whoami', // the API (PORT)
      'http://127.0.0.1:9464/metrics', // the worker's metrics
      'http://127.0.0.1:5432/', // Postgres (DATABASE_URL's default port)
      'http://[::1]:7233/', // Temporal
      'http://127.0.0.1:8233/', // the Temporal UI
      'http://127.0.0.1:3101/backend/token', // the identity provider (AUTH_JWKS_URL)
    ];
    for (const url of own) assert.match(String(await refusal(loopback, url)), /service's own/, url);
    const privately = loadConfig({ NODE_ENV: 'test', WEBHOOK_ALLOWED_ADDRESSES: 'private' });
    assert.match(String(await refusal(privately, 'http://10.0.0.5:5432/')), /service's own/);
    assert.equal(await refusal(privately, 'http://10.0.0.5:8443/hook'), undefined);
    // A setting that writes no port (a public provider on 443) does not make 443 the service's own.
    const behind = loadConfig({
      NODE_ENV: 'test',
      WEBHOOK_ALLOWED_ADDRESSES: 'private',
      OBJECT_STORE_ENDPOINT: 'https://s3.eu-west-1.amazonaws.com',
      PUBLIC_BASE_URL: 'https://api.lender.example',
    });
    assert.equal(await refusal(behind, 'https://10.0.0.5/hook'), undefined);
  });
});

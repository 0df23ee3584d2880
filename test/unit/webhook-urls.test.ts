import { strict as assert } from 'node:assert';
import { checkUrl } from '../../api/webhooks/endpoints';
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
  const production = { NODE_ENV: 'production', WEBHOOK_ALLOWED_ADDRESSES: 'public' } as const;

  it('in production an endpoint must be https', async () => {
    assert.equal(await refusal(production, 'http://93.184.216.34/hook'), 'must be https');
    assert.equal(await refusal(production, 'https://93.184.216.34/hook'), undefined);
  });

  it('loopback is refused unless the setting allows it, link-local always', async () => {
    assert.match(String(await refusal(production, 'https://127.0.0.1/hook')), /loopback/);
    const loopback = { NODE_ENV: 'test', WEBHOOK_ALLOWED_ADDRESSES: 'loopback' } as const;
    assert.equal(await refusal(loopback, 'http://127.0.0.1:3109/webhooks/demo'), undefined);
    assert.match(String(await refusal(loopback, 'http://169.254.169.254/')), /link-local/);
  });
});

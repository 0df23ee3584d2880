import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import fc from 'fast-check';
import { ConfigError, loadConfig } from '../../config';
import { parseByteSize, parseDuration } from '../../config/duration';
import { loadDevConfig } from '../../dev/config';

describe('configuration from the environment', () => {
  it('applies documented defaults when nothing is set', () => {
    const config = loadConfig({});
    assert.equal(config.PORT, 3000);
    assert.equal(config.DATABASE_URL, undefined);
    assert.equal(config.TEMPORAL_ADDRESS, undefined);
    assert.equal(config.KYC_EXPIRY_SWEEP_INTERVAL, 15 * 60_000);
    assert.equal(config.BODY_LIMIT, 100 * 1024);
  });

  it('parses every duration as milliseconds', () => {
    const config = loadConfig({ KYC_SUBMISSION_WINDOW: '90s', KYC_CALLBACK_WAIT: '250ms', IDEMPOTENCY_KEY_TTL: '2d' });
    assert.equal(config.KYC_SUBMISSION_WINDOW, 90_000);
    assert.equal(config.KYC_CALLBACK_WAIT, 250);
    assert.equal(config.IDEMPOTENCY_KEY_TTL, 2 * 86_400_000);
  });

  it('rejects wrong values naming each variable', () => {
    assert.throws(
      () =>
        loadConfig({ PORT: 'eighty', KYC_CALLBACK_WAIT: '15 minutes', DATABASE_URL: 'not a url', LOG_LEVEL: 'loud' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems.map((p) => p.variable).sort(), [
          'DATABASE_URL',
          'KYC_CALLBACK_WAIT',
          'LOG_LEVEL',
          'PORT',
        ]);
        assert.match(error.message, /KYC_CALLBACK_WAIT: expected a duration/);
        return true;
      },
    );
  });

  it('keeps the dev-only settings out of the service configuration, and checks them in the dev one', () => {
    const env = { DATA_DIR: '/tmp/x', TEMPORAL_UI_PORT: '9000', PORT: '3001' };
    const service = loadConfig(env);
    assert.equal(service.PORT, 3001);
    assert.equal('DATA_DIR' in service, false);
    assert.equal('TEMPORAL_UI_PORT' in service, false);
    const dev = loadDevConfig(env);
    assert.equal(dev.PORT, 3001);
    assert.equal(dev.DATA_DIR, '/tmp/x');
    assert.equal(dev.TEMPORAL_UI_PORT, 9000);
    assert.equal(dev.EMBEDDED_POSTGRES_PORT, 54329);
    assert.throws(
      () => loadDevConfig({ TEMPORAL_UI_PORT: 'ui' }),
      (error: unknown) => error instanceof ConfigError && error.problems[0]?.variable === 'TEMPORAL_UI_PORT',
    );
  });

  it('stops npm start before anything runs when a value is wrong', function () {
    this.timeout(30_000);
    const root = path.resolve(__dirname, '../..');
    const result = spawnSync(path.join(root, 'node_modules/.bin/tsx'), ['dev/start.ts'], {
      cwd: root,
      env: { ...process.env, PORT: '70000', KYC_CALLBACK_WAIT: 'soon' },
      encoding: 'utf8',
      timeout: 25_000,
    });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /PORT/);
    assert.match(result.stderr, /KYC_CALLBACK_WAIT/);
  });

  it('parses durations and sizes strictly (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom('ms', 's', 'm', 'h', 'd'), (n, unit) => {
        const factor = { ms: 1, s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[unit];
        assert.equal(parseDuration(`${n}${unit}`), n * factor);
      }),
    );
    for (const bad of ['', '0s', '-1s', '1.5s', '1 s', '1w', 's']) assert.equal(parseDuration(bad), undefined, bad);
    assert.equal(parseByteSize('15mb'), 15 * 1024 * 1024);
    assert.equal(parseByteSize('100KB'), 100 * 1024);
    assert.equal(parseByteSize('1gb'), undefined);
  });
});

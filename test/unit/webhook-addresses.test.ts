import { strict as assert } from 'node:assert';
import { addressRefusal } from '../../providers/webhooks/addresses';
import { retryAfterMs, verdictOf } from '../../domain/webhooks/verdicts';

describe('webhook addresses and verdicts', () => {
  it('link-local (cloud metadata), unspecified and multicast addresses are refused whatever the setting', () => {
    for (const ip of [
      '169.254.169.254',
      'fe80::1',
      '0.0.0.0',
      '::',
      '224.0.0.1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
    ])
      for (const allowed of ['public', 'loopback', 'private'] as const)
        assert.ok(addressRefusal(ip, allowed), `${ip} under ${allowed}`);
  });

  it('loopback ([::1] too) and private addresses only where the setting allows them', () => {
    assert.ok(addressRefusal('127.0.0.1', 'public'));
    assert.equal(addressRefusal('127.0.0.1', 'loopback'), undefined);
    // [::1] is loopback, allowed as 127.0.0.1 is (it lies inside the refused ::/96; ::2 still is refused).
    assert.ok(addressRefusal('::1', 'public'));
    assert.equal(addressRefusal('::1', 'loopback'), undefined);
    assert.equal(addressRefusal('::1', 'private'), undefined);
    assert.ok(addressRefusal('::2', 'loopback'));
    assert.ok(addressRefusal('::127.0.0.1', 'loopback'), 'IPv4-compatible loopback is not ::1');
    assert.ok(addressRefusal('10.1.2.3', 'loopback'));
    assert.ok(addressRefusal('::ffff:a00:7', 'loopback'), 'IPv4-mapped, as URLs write it');
    assert.equal(addressRefusal('10.1.2.3', 'private'), undefined);
    assert.equal(addressRefusal('fd00::1', 'private'), undefined);
    assert.equal(addressRefusal('93.184.216.34', 'public'), undefined);
    assert.equal(addressRefusal('2606:4700::1111', 'public'), undefined);
  });

  it('a 2xx delivers; 5xx, 408, 429, timeouts and connection failures retry; other answers end it', () => {
    const now = new Date('2026-11-28T12:00:00Z');
    assert.deepEqual(verdictOf({ kind: 'answered', status: 204 }, now), { kind: 'delivered' });
    for (const status of [500, 502, 503, 408, 429])
      assert.equal(verdictOf({ kind: 'answered', status }, now).kind, 'retry');
    for (const status of [301, 400, 401, 404, 410])
      assert.equal(verdictOf({ kind: 'answered', status }, now).kind, 'give-up');
    assert.equal(verdictOf({ kind: 'unanswered', error: 'timeout', detail: '' }, now).kind, 'retry');
    assert.equal(verdictOf({ kind: 'unanswered', error: 'address', detail: '' }, now).kind, 'give-up');
  });

  it('Retry-After is honoured as seconds or as an HTTP date', () => {
    const now = new Date('2026-11-28T12:00:00Z');
    assert.deepEqual(verdictOf({ kind: 'answered', status: 429, retryAfter: '7' }, now), {
      kind: 'retry',
      reason: 'answered 429',
      afterMs: 7_000,
    });
    assert.equal(retryAfterMs('Sat, 28 Nov 2026 12:01:00 GMT', now), 60_000);
    assert.equal(retryAfterMs('soon', now), undefined);
    assert.equal(retryAfterMs('0', now), 1_000, 'at least a second');
  });
});

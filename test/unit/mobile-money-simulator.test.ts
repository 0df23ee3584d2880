import { strict as assert } from 'node:assert';
import { LIMITS } from '../../simulators/mobile-money/model';
import { createSimulatorState } from '../../simulators/mobile-money/state';

/** The simulated provider's memory: bounded, but never by dropping what the provider would still honour. */
describe('unit: mobile-money simulator OAuth tokens are valid until they expire, however many are issued', () => {
  const options = { consumerKey: 'k', consumerSecret: 's', shortCode: '174379', passkey: 'p' };

  it('no eviction by count: 1,000 tokens issued, every one still held', () => {
    const state = createSimulatorState(options);
    const tokens = Array.from({ length: 1_000 }, () => state.issueToken());
    assert.equal(state.tokens.size, 1_000);
    assert.ok(tokens.every((token) => token !== undefined && state.tokens.has(token)));
  });

  it('memory is bounded by expiry: at the ceiling, expired tokens are dropped; live ones never are', () => {
    const state = createSimulatorState(options);
    state.mode.tokenTtlSeconds = 1;
    const realNow = Date.now;
    try {
      for (let i = 0; i < LIMITS.liveTokens; i++) state.issueToken();
      Date.now = () => realNow() + 2_000; // all of them expired
      const fresh = state.issueToken();
      assert.deepEqual([...state.tokens.keys()], [fresh]);
    } finally {
      Date.now = realNow;
    }
  });

  it('a flood of live tokens is refused at the ceiling (the provider’s spike arrest), not made room for', () => {
    const state = createSimulatorState(options);
    const first = state.issueToken();
    for (let i = 1; i < LIMITS.liveTokens; i++) state.issueToken();
    assert.equal(state.issueToken(), undefined);
    assert.ok(state.tokens.has(first!), 'the oldest live token still works');
  });
});

import { strict as assert } from 'node:assert';
import { createSimulatorState } from '../../providers/mobile-money/simulator/state';

/** The simulated provider's memory: bounded, but never by dropping what the provider would still honour. */
describe('unit: mobile-money simulator OAuth tokens are valid until they expire, however many are issued', () => {
  const options = { consumerKey: 'k', consumerSecret: 's', shortCode: '174379', passkey: 'p' };

  it('no eviction by count: 1,000 tokens issued, every one still held', () => {
    const state = createSimulatorState(options);
    const tokens = Array.from({ length: 1_000 }, () => state.issueToken());
    assert.equal(state.tokens.size, 1_000);
    assert.ok(tokens.every((token) => state.tokens.has(token)));
  });

  it('memory is bounded by expiry: expired tokens are dropped when the next one is issued', () => {
    const state = createSimulatorState(options);
    for (let i = 0; i < 50; i++) state.issueToken();
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + (state.mode.tokenTtlSeconds + 1) * 1000;
      const fresh = state.issueToken();
      assert.deepEqual([...state.tokens.keys()], [fresh]);
    } finally {
      Date.now = realNow;
    }
  });
});

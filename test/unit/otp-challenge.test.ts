import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { OtpChallenge } from '../../workflows/current-account/otp-challenge';

const digest = (code: string) => createHash('sha256').update(code).digest('hex');
const refusedAs = (type: string) => (error: unknown) => error instanceof ApplicationFailure && error.type === type;

/** The code a run started with this code waits for (its patch applies), outside a workflow. */
async function challenge() {
  const code = new OtpChallenge({ ttlMs: 60_000, maxAttempts: 3, resendCooldownMs: 1_000 }, () => true);
  await code.send(async () => ({ digest: digest('123456'), sentAtMs: Date.now() }));
  return code;
}

describe('unit: one code a run waits for (OtpChallenge)', () => {
  it('once a code is accepted, a submission let through before it is refused when handled, without counting', async () => {
    const code = await challenge();
    // Both pass the validator while the code is open...
    assert.equal(code.refusal(digest('654321'), Date.now()), undefined);
    assert.equal(code.refusal(digest('123456'), Date.now()), undefined);
    // ...the right one is handled first: the wrong one, handled after, is refused and not counted.
    assert.deepEqual(await code.submit(digest('123456')), { outcome: 'ACCEPTED' });
    await assert.rejects(code.submit(digest('654321')), refusedAs('NOT_AWAITED'));
    assert.equal(code.attempts, 0);
    await assert.rejects(code.submit(digest('123456')), refusedAs('NOT_AWAITED'), 'single use');
  });

  it('once the attempts are used up, the right code let through before is refused when handled', async () => {
    const code = await challenge();
    assert.deepEqual(await code.submit(digest('000001')), { outcome: 'WRONG_CODE', attemptsLeft: 2 });
    assert.deepEqual(await code.submit(digest('000002')), { outcome: 'WRONG_CODE', attemptsLeft: 1 });
    assert.equal(code.refusal(digest('123456'), Date.now()), undefined);
    assert.deepEqual(await code.submit(digest('000003')), { outcome: 'LOCKED' });
    await assert.rejects(code.submit(digest('123456')), refusedAs('NOT_AWAITED'));
    assert.equal(code.attempts, 3);
  });
});

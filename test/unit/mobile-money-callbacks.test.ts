import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { normalizeKenyanMobile } from '../../domain/identifiers';
import { assessPayoutResult, assessPushCallback, wholeShillings } from '../../domain/mobile-money/callbacks';
import type { StkCallbackTrigger, StkResult } from '../../workflows/mobile-money/messages';
import { PushCallbackTriage } from '../../workflows/mobile-money/stk-push-callbacks';

const OWN = { checkoutRequestId: 'ws_CO_own', merchantRequestId: 'm-own' };
const push = { ...OWN, amountMinor: 10_000, phone: '+254712345670' };
const paid = { ...OWN, resultCode: '0', amount: 100, phone: '254712345670', receipt: 'NLJ7RT61SV' };

describe('unit: what a mobile-money callback proves (domain/mobile-money/callbacks.ts)', () => {
  it('a paid push callback settles only when complete and consistent; each missing or wrong fact is named', () => {
    assert.deepEqual(assessPushCallback(push, paid), { settles: true, problems: [], paymentMatches: true });
    const cases: [Partial<typeof paid>, string][] = [
      [{ amount: undefined }, 'no amount'],
      [{ amount: 100.004 }, 'another amount'],
      [{ phone: '2547*****670' }, 'a phone in an unknown form'],
      [{ phone: '254712345679' }, 'another phone'],
      [{ receipt: undefined }, 'no receipt'],
      [{ receipt: 'nlj7rt61sv' }, 'a malformed receipt'],
      [{ merchantRequestId: 'm-other' }, 'another MerchantRequestID'],
    ];
    for (const [change, problem] of cases) {
      const assessment = assessPushCallback(push, { ...paid, ...change });
      assert.equal(assessment.settles, false, problem);
      assert.deepEqual(assessment.problems, [problem]);
    }
    assert.equal(
      assessPushCallback(push, { ...paid, merchantRequestId: 'm-other' }).paymentMatches,
      false,
      'a contradicting id: its receipt is not kept',
    );
  });

  it('a refusal never settles a push by itself, whatever it carries', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((code) => code !== '0'),
        (resultCode) => {
          const assessment = assessPushCallback(push, { ...paid, resultCode });
          return !assessment.settles && !assessment.paymentMatches;
        },
      ),
      { seed: 20261123 },
    );
  });

  it('no B2C result of a payout whose ConversationID is unknown settles it; one right in all else awaits the answer (the run compares its ConversationID)', () => {
    const payout = { id: 'trx-1', conversationId: null, amountMinor: 100_000, phone: '+254712345670' };
    const result = {
      originatorConversationId: 'trx-1',
      conversationId: 'AG_x',
      amount: 1_000,
      receipt: 'NLJ7RT61SV',
      receiver: '254712345670 - A',
    };
    for (const resultCode of ['0', '2040']) {
      const assessment = assessPayoutResult(payout, { ...result, resultCode });
      assert.equal(assessment.settles, false, resultCode);
      assert.equal(assessment.awaitsAnswer, true, resultCode);
    }
    for (const wrong of [{ amount: 999 }, { receiver: '254712345679 - B' }, { originatorConversationId: 'trx-2' }])
      assert.equal(assessPayoutResult(payout, { ...result, ...wrong, resultCode: '0' }).awaitsAnswer, false);
    const known = assessPayoutResult({ ...payout, conversationId: 'AG_x' }, { ...result, resultCode: '0' });
    assert.deepEqual([known.settles, known.awaitsAnswer], [true, false]);
  });

  it('Kenyan mobile numbers normalise from every form callbacks use; anything else is undefined (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom('7', '1'), fc.stringMatching(/^\d{8}$/), (lead, rest) => {
        const expected = `+254${lead}${rest}`;
        return [
          `254${lead}${rest}`,
          Number(`254${lead}${rest}`),
          `+254${lead}${rest}`,
          `0${lead}${rest}`,
          `${lead}${rest}`,
        ].every((form) => normalizeKenyanMobile(form) === expected);
      }),
      { seed: 20261123 },
    );
    for (const bad of ['2547****5670', '255712345670', '+2547123456', null, {}, ''])
      assert.equal(normalizeKenyanMobile(bad), undefined, String(bad));
  });

  it('whole shillings: integers and their plain text only', () => {
    assert.deepEqual([100, '100', '100.0', '100.00'].map(wholeShillings), [100, 100, 100, 100]);
    for (const bad of ['0x64', 100.004, '1e2', ' 100', -1, Number.NaN, '100.5'])
      assert.equal(wholeShillings(bad), undefined, String(bad));
  });
});

describe('unit: what callbacks may do to a push run (workflows/mobile-money/stk-push-callbacks.ts)', () => {
  const result = (checkoutRequestId: string, extra: Partial<StkResult> = {}): StkResult => ({
    source: 'callback',
    checkoutRequestId,
    resultCode: '0',
    resultDesc: 'paid',
    ...extra,
  });
  const trigger = (checkoutRequestId: string, receipt?: string): StkCallbackTrigger => ({ checkoutRequestId, receipt });

  it('callbacks before the push answer are judged when it comes: a forged early result cannot crowd out the genuine one', () => {
    const triage = new PushCallbackTriage();
    triage.onResult(result('ws_CO_forged'));
    triage.onResult(result(OWN.checkoutRequestId, { merchantRequestId: OWN.merchantRequestId, receipt: 'NLJ7RT61SV' }));
    assert.equal(triage.result, undefined, 'nothing settles before the answer');
    triage.onAnswer(OWN);
    assert.equal((triage.result as StkResult | undefined)?.checkoutRequestId, OWN.checkoutRequestId);
  });

  it('with the ids known, a trigger asks about the own push only; a refusal from the query settles it', () => {
    const triage = new PushCallbackTriage();
    triage.onAnswer(OWN);
    triage.onTrigger(trigger('ws_CO_other'));
    assert.equal(triage.urgent, false);
    triage.onTrigger(trigger(OWN.checkoutRequestId));
    const [ask] = triage.toAsk(false);
    assert.deepEqual(ask, { checkoutRequestId: OWN.checkoutRequestId, receipt: undefined });
    triage.onQueryAnswer(ask!, { state: 'final', resultCode: '1032', resultDesc: 'cancelled' });
    assert.equal(triage.result?.resultCode, '1032');
  });

  it('with the answer lost, only callbacks that proved the payment name pushes to ask about, and nothing settles without a paid answer (property)', () => {
    const callback = fc.record({
      id: fc.constantFrom('ws_CO_a', 'ws_CO_b', 'ws_CO_c', 'ws_CO_d', 'ws_CO_e', 'ws_CO_f', 'ws_CO_g'),
      receipt: fc.option(fc.constant('NLJ7RT61SV'), { nil: undefined }),
      kind: fc.constantFrom('result', 'trigger'),
      early: fc.boolean(),
    });
    const answer = fc.constantFrom<
      { state: 'pending' } | { state: 'unknown' } | { state: 'final'; resultCode: string; resultDesc: string }
    >(
      { state: 'pending' },
      { state: 'unknown' },
      { state: 'final', resultCode: '1032', resultDesc: 'cancelled' },
      { state: 'final', resultCode: '0', resultDesc: 'paid' },
    );
    fc.assert(
      fc.property(fc.array(callback, { maxLength: 20 }), fc.array(answer, { maxLength: 20 }), (callbacks, answers) => {
        const triage = new PushCallbackTriage();
        const deliver = (c: (typeof callbacks)[number]) =>
          c.kind === 'result'
            ? triage.onResult(result(c.id, { receipt: c.receipt }))
            : triage.onTrigger(trigger(c.id, c.receipt));
        callbacks.filter((c) => c.early).forEach(deliver);
        triage.onAnswer(undefined);
        callbacks.filter((c) => !c.early).forEach(deliver);
        const proven = new Set<string>(callbacks.filter((c) => c.receipt).map((c) => c.id));
        let answered = 0;
        for (const ask of [...triage.toAsk(false), ...triage.toAsk(true)]) {
          if (!proven.has(ask.checkoutRequestId)) return false; // asked about a push no callback proved
          triage.onQueryAnswer(ask, answers[answered++] ?? { state: 'pending' });
        }
        if (!triage.result) return true;
        return (
          triage.result.source === 'query' &&
          triage.result.resultCode === '0' &&
          proven.has(triage.result.checkoutRequestId)
        );
      }),
      { seed: 20261123, numRuns: 300 },
    );
  });
});

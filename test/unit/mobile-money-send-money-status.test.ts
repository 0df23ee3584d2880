import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { assessSendMoneyStatus, type SendMoneyStatusFacts } from '../../domain/mobile-money/send-money-status';

const payout = { id: 'trx-1', conversationId: 'AG_payout', amountMinor: 100_000, phone: '+254712345670' };
const query = { conversationId: 'AG_query', originatorConversationId: '1236-7134259-1' };
const completed: SendMoneyStatusFacts = {
  resultCode: '0',
  resultDesc: 'The service request is processed successfully.',
  queryConversationId: 'AG_query',
  queryOriginatorConversationId: '1236-7134259-1',
  transaction: {
    status: 'Completed',
    originatorConversationId: 'trx-1',
    conversationId: 'AG_payout',
    receipt: 'NLJ7RT61SV',
    amount: '1000',
    creditParty: '254712345670 - A Recipient',
  },
};
const withTransaction = (change: Partial<NonNullable<SendMoneyStatusFacts['transaction']>>): SendMoneyStatusFacts => ({
  ...completed,
  transaction: { ...completed.transaction, ...change },
});

describe("unit: what a payout's status Result proves (domain/mobile-money/send-money-status.ts)", () => {
  it('a completed status of our payout, to its query, with the amount, recipient and a well-formed receipt: completed, nothing wrong', () => {
    assert.deepEqual(assessSendMoneyStatus(payout, query, completed), {
      verdict: { kind: 'completed', receipt: 'NLJ7RT61SV', conversationId: 'AG_payout' },
      problems: [],
      early: false,
    });
    // The payout's ConversationID unknown here (its answer lost): the status is what tells it.
    const lost = assessSendMoneyStatus({ ...payout, conversationId: null }, query, completed);
    assert.deepEqual(lost.problems, []);
    // Then the ConversationID it brings is stored: it must look like one.
    const odd = withTransaction({ conversationId: 'AG_' + 'x'.repeat(80) });
    assert.deepEqual(assessSendMoneyStatus({ ...payout, conversationId: null }, query, odd).problems, [
      'a malformed ConversationID',
    ]);
  });

  it('each missing or wrong fact is named, and one before its query was answered cannot be checked (early)', () => {
    const cases: [SendMoneyStatusFacts, string][] = [
      [{ ...completed, queryConversationId: 'AG_other' }, 'the ids of another query'],
      [{ ...completed, queryOriginatorConversationId: '1-2-3' }, 'the ids of another query'],
      [withTransaction({ originatorConversationId: undefined }), 'no OriginatorConversationID'],
      [withTransaction({ originatorConversationId: 'trx-2' }), 'another OriginatorConversationID'],
      [withTransaction({ conversationId: 'AG_other' }), 'another ConversationID'],
      [withTransaction({ amount: '999' }), 'another amount'],
      [withTransaction({ amount: '1000.5' }), 'another amount'],
      [withTransaction({ amount: undefined }), 'no amount'],
      [withTransaction({ creditParty: '254712345679 - Someone Else' }), 'another phone'],
      [withTransaction({ creditParty: undefined }), 'no phone'],
      [withTransaction({ receipt: undefined }), 'no receipt'],
      [withTransaction({ receipt: 'nlj7rt61sv' }), 'a malformed receipt'],
      [withTransaction({ status: 'Reversed' }), 'a TransactionStatus not understood'],
      [withTransaction({ status: undefined }), 'no TransactionStatus'],
      [
        withTransaction({ status: 'Declined', receipt: undefined, reasonCode: '0' }),
        'a failure with the code of success',
      ],
      [withTransaction({ status: 'Declined', reasonCode: '2040' }), 'a failure with a receipt'],
      [
        withTransaction({ status: 'Declined', receipt: undefined, reasonCode: '2040; drop' }),
        'a malformed reason code',
      ],
      [{ ...withTransaction({}), resultCode: '2032' }, '"not found" with details of a transaction'],
    ];
    for (const [facts, problem] of cases)
      assert.deepEqual(assessSendMoneyStatus(payout, query, facts).problems, [problem]);
    const early = assessSendMoneyStatus(payout, { conversationId: null, originatorConversationId: null }, completed);
    assert.deepEqual([early.early, early.problems], [true, ['before its query was answered']]);
  });

  it('declined, cancelled or expired: failed with the payout’s own code when given; initiated or authorized: pending', () => {
    const declined = assessSendMoneyStatus(
      payout,
      query,
      withTransaction({ status: 'Declined', receipt: undefined, reasonCode: '2040', reason: 'Not registered' }),
    );
    assert.deepEqual(declined, {
      verdict: { kind: 'failed', resultCode: '2040', resultDesc: 'Not registered', conversationId: 'AG_payout' },
      problems: [],
      early: false,
    });
    for (const status of ['Cancelled', 'Expired'])
      assert.equal(assessSendMoneyStatus(payout, query, withTransaction({ status })).verdict.kind, 'failed', status);
    for (const status of ['Initiated', 'Authorized', 'Pending Authorized'])
      assert.deepEqual(assessSendMoneyStatus(payout, query, withTransaction({ status })).verdict, {
        kind: 'pending',
        status,
      });
  });

  it('2032: not found (no parameters needed); any other code is the query’s own failure, nothing said of the payout', () => {
    const bare = { ...completed, transaction: undefined };
    assert.deepEqual(assessSendMoneyStatus(payout, query, { ...bare, resultCode: '2032' }), {
      verdict: { kind: 'not_found' },
      problems: [],
      early: false,
    });
    for (const resultCode of ['2001', 'SFC_IC0003', '1'])
      assert.deepEqual(assessSendMoneyStatus(payout, query, { ...bare, resultCode }), {
        verdict: { kind: 'query_failed' },
        problems: [],
        early: false,
      });
    // A "not found" with another query's ids (a forger holding the URL) is not taken.
    assert.deepEqual(
      assessSendMoneyStatus(payout, query, { ...bare, resultCode: '2032', queryConversationId: 'AG_forged' }).problems,
      ['the ids of another query'],
    );
  });

  it('no completed status moves money unless every fact is ours (property: any change to one is named)', () => {
    const facts = fc.record({
      queryConversationId: fc.constantFrom('AG_query', 'AG_other'),
      originator: fc.constantFrom('trx-1', 'trx-2', undefined),
      amount: fc.constantFrom('1000', '1000.0', 1000, '999', '0x3e8', undefined),
      creditParty: fc.constantFrom('254712345670 - A', '0712345670 - A', '254712345679 - B', undefined),
      receipt: fc.constantFrom('NLJ7RT61SV', 'NLJ7RT61S', undefined),
    });
    fc.assert(
      fc.property(facts, (f) => {
        const { problems, verdict } = assessSendMoneyStatus(payout, query, {
          ...withTransaction({
            originatorConversationId: f.originator,
            amount: f.amount,
            creditParty: f.creditParty,
            receipt: f.receipt,
          }),
          queryConversationId: f.queryConversationId,
        });
        const ours =
          f.queryConversationId === 'AG_query' &&
          f.originator === 'trx-1' &&
          ['1000', '1000.0', 1000].includes(f.amount as string | number) &&
          f.creditParty !== undefined &&
          f.creditParty !== '254712345679 - B' &&
          f.receipt === 'NLJ7RT61SV';
        return verdict.kind === 'completed' && (problems.length === 0) === ours;
      }),
      { seed: 20261201 },
    );
  });
});

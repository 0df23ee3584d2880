import { strict as assert } from 'node:assert';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import type { StatusQueryRow } from '../../db/mobile-money/send-money-status';
import type { TransactionRow } from '../../db/mobile-money/transactions';
import { workflowIds } from '../../workflows/ids';
import type { SendMoneyInput } from '../../workflows/mobile-money/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import {
  b2cResult,
  balanceOf,
  callbacksRecorded,
  fundedCustomer,
  insertPayoutTransaction,
  journalKinds,
  mobileMoneyActivities,
  newCustomer,
  fund,
  payerNumber,
  paymentsTo,
  postCallback,
  providerPhone,
  resetSimulator,
  sendAccepted,
  setSimulatorMode,
  settled,
  transactionRow,
  until,
} from '../support/money';

/**
 * README "Mobile money", send-money: when a payout's result does not come, the service settles it
 * by asking the provider's Transaction Status (providers/mobile-money/protocol.ts). It never gives
 * up while the provider may have paid. A status answer is a callback like any other: it comes to a
 * URL with a token of its own, and it moves money only when it is consistent with the query and
 * the payout.
 */
const FUNDED = 500_000;
const AMOUNT = 100_000;

const statusQueriesOf = (transactionId: string): Promise<StatusQueryRow[]> =>
  harness().db('payout_status_queries').where({ transaction_id: transactionId }).orderBy('asked_at');
const statusCallbacks = async (transactionId: string) =>
  (await callbacksRecorded(transactionId)).filter((c) => c.kind === 'B2C_STATUS');
/** A status query of the payout, once the provider's answer to it is recorded. */
const answeredQuery = (transactionId: string) =>
  until('a status query answered', async () => (await statusQueriesOf(transactionId)).find((q) => q.conversation_id));
/** The status answers recorded for the payout, once there is one. */
const statusAnswers = (transactionId: string, what = 'a status answer') =>
  until(what, async () => {
    const rows = await statusCallbacks(transactionId);
    return rows.length > 0 && rows;
  });
const postStatus = (
  query: Pick<StatusQueryRow, 'id' | 'token'>,
  body: unknown,
  token = query.token,
  outcome: 'result' | 'timeout' = 'result',
) => call('POST', `/v1/transactions/mobilemoney/callbacks/b2c-status/${query.id}/${token}/${outcome}`, { json: body });

/** A status Result as the provider builds it (providers/mobile-money/protocol.ts), with the facts a test sets. */
function statusResult(
  query: Pick<StatusQueryRow, 'conversation_id' | 'originator_conversation_id'>,
  facts: {
    resultCode?: number | string;
    status?: string;
    originator?: string;
    amount?: number;
    receipt?: string;
    phone?: string;
  },
) {
  const parameters = [
    { Key: 'CreditPartyName', Value: facts.phone && `${providerPhone(facts.phone)} - Recipient` },
    { Key: 'OriginatorConversationID', Value: facts.originator },
    { Key: 'TransactionStatus', Value: facts.status },
    { Key: 'Amount', Value: facts.amount === undefined ? undefined : String(facts.amount) },
    { Key: 'ReceiptNo', Value: facts.receipt },
  ].filter((p) => p.Value !== undefined);
  return {
    Result: {
      ResultType: 0,
      ResultCode: facts.resultCode ?? 0,
      ResultDesc: 'The service request is processed successfully.',
      OriginatorConversationID: query.originator_conversation_id,
      ConversationID: query.conversation_id,
      TransactionID: 'SIM0000000',
      ...(parameters.length > 0 && { ResultParameters: { ResultParameter: parameters } }),
    },
  };
}

/**
 * A payout row of `customer` to its own phone, its run started here with timings of the test's
 * own (the harness API's are seconds for the whole suite). `answerLost`: the payout already taken by
 * the provider and its answer lost, as when the worker died between the two (its retry is then
 * refused as a duplicate); `queueTimedOut`: its queue timeout noted before the run starts.
 */
async function startPayout(
  customer: Awaited<ReturnType<typeof newCustomer>>,
  timings: Pick<SendMoneyInput, 'resultWaitMs' | 'statusQueryAfterMs' | 'statusQueryIntervalMs'>,
  options: { answerLost?: boolean; queueTimedOut?: boolean } = {},
): Promise<TransactionRow> {
  const { client, db, taskQueue } = harness();
  const row = await insertPayoutTransaction(customer, AMOUNT);
  if (options.answerLost) {
    assert.equal((await mobileMoneyActivities().sendB2c(row.id)).state, 'accepted');
    await db('transactions').where({ id: row.id }).update({ conversation_id: null });
    // The provider's queue timeout for it, noted before the run starts (the simulator sends one for digit 7).
    if (options.queueTimedOut)
      await until('its queue timeout noted', async () => (await transactionRow(row.id)).queue_timeout_at);
  }
  const input: SendMoneyInput = { transactionId: row.id, organizationId: row.organization_id, ...timings };
  await client.workflow.start('sendMoney', { taskQueue, workflowId: workflowIds.sendMoney(row.id), args: [input] });
  return transactionRow(row.id);
}
const result = (transactionId: string) =>
  harness().client.workflow.getHandle(workflowIds.sendMoney(transactionId)).result();

describe('send-money: every copy of the result lost, the provider is asked (Transaction Status)', () => {
  afterEach(resetSimulator);

  it('paid → POSTED with the receipt the provider reports; declined → FAILED with its reason; "not found" with its queue timeout lost too proves nothing alone (NOTED; FAILED NO_RESULT when the wait ends); nothing left held', async () => {
    await setSimulatorMode({ callbacks: 'lose' });
    const cases = [
      { digit: 0, status: 'POSTED', reason: null, history: 'sendMoney-status-query-completed' },
      { digit: 3, status: 'FAILED', reason: 'PROVIDER_INSUFFICIENT_FUNDS', history: 'sendMoney-status-query-declined' },
      { digit: 8, status: 'FAILED', reason: 'RECIPIENT_NOT_REGISTERED' },
      { digit: 7, status: 'FAILED', reason: 'NO_RESULT', history: 'sendMoney-status-query-not-found-alone' },
    ];
    await Promise.all(
      cases.map(async ({ digit, status, reason, history }) => {
        const customer = await fundedCustomer(FUNDED);
        const recipient = payerNumber(digit);
        const created = await sendAccepted(customer, AMOUNT, recipient);
        const done = await settled(customer.headers, created.id);
        assert.deepEqual([done.status, done.failure_reason], [status, reason], `digit ${digit}`);
        const [payment] = await paymentsTo(recipient);
        assert.equal(payment!.callbacksSent, 0, 'no result ever came');
        const [asked] = await statusQueriesOf(created.id);
        assert.ok(
          asked!.asked_at.getTime() - Date.parse(done.transacted_at) >=
            harness().config.SEND_MONEY_STATUS_QUERY_AFTER - 100,
          'asked once SEND_MONEY_STATUS_QUERY_AFTER passed',
        );
        if (reason === 'NO_RESULT') {
          const answers = await statusAnswers(created.id);
          for (const answer of answers)
            assert.deepEqual(
              [answer.disposition, answer.note],
              ['NOTED', 'not found, asked before any queue timeout: it may still be queued'],
            );
        } else
          assert.deepEqual(
            (await statusCallbacks(created.id)).map((c) => c.disposition),
            ['SIGNALLED'],
          );
        const fee = created.fee_amount.value;
        if (status === 'POSTED') {
          assert.equal(done.mobilemoney_transaction_id, payment!.transactionId, "the provider's receipt");
          assert.equal((await transactionRow(created.id)).conversation_id, payment!.conversationId);
          assert.deepEqual(await journalKinds(created.id), ['HOLD', 'PAYOUT']);
          assert.deepEqual(await balanceOf(customer.current), {
            balance: FUNDED - AMOUNT - fee,
            held: 0,
            available: FUNDED - AMOUNT - fee,
          });
        } else {
          assert.deepEqual(await journalKinds(created.id), ['HOLD', 'RELEASE']);
          assert.deepEqual(await balanceOf(customer.current), { balance: FUNDED, held: 0, available: FUNDED });
        }
        if (history) await recordHistory(workflowIds.sendMoney(created.id), history);
      }),
    );
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('never processed, its queue timeout noted: "not found" from a query asked after it → FAILED QUEUE_TIMEOUT, before the wait ends', async () => {
    const customer = await newCustomer(7); // the simulator's queue timeout: accepted, never processed
    await fund(customer.current, FUNDED);
    const started = Date.now();
    const row = await startPayout(customer, {
      resultWaitMs: 30_000,
      statusQueryAfterMs: 1_000,
      statusQueryIntervalMs: 1_000,
    });
    assert.deepEqual(await result(row.id), { status: 'FAILED', failureReason: 'QUEUE_TIMEOUT' });
    assert.ok(Date.now() - started < 20_000, 'settled by the status answer, not by the wait');
    const done = await transactionRow(row.id);
    const signalled = (await statusCallbacks(row.id)).filter((c) => c.disposition === 'SIGNALLED');
    assert.equal(signalled.length, 1, 'one "not found" handed to the run');
    const queries = await statusQueriesOf(row.id);
    assert.ok(
      queries.some((q) => q.asked_at >= done.queue_timeout_at!),
      'asked after the queue timeout was noted',
    );
    assert.deepEqual(await journalKinds(row.id), ['HOLD', 'RELEASE']);
    assert.deepEqual(await balanceOf(customer.current), { balance: FUNDED, held: 0, available: FUNDED });
    await recordHistory(workflowIds.sendMoney(row.id), 'sendMoney-status-query-not-found');
  });

  it('the status result lost too: the provider is asked again at the next interval, and that answer settles the payout', async () => {
    await setSimulatorMode({ callbacks: 'lose', statusResultsLost: 1 });
    const customer = await fundedCustomer(FUNDED);
    const created = await sendAccepted(customer, AMOUNT, payerNumber(0));
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    const queries = await statusQueriesOf(created.id);
    assert.ok(queries.length >= 2, `asked ${queries.length} times`);
    const interval = queries[1]!.asked_at.getTime() - queries[0]!.asked_at.getTime();
    assert.ok(interval >= harness().config.SEND_MONEY_STATUS_QUERY_INTERVAL - 100, `asked again after ${interval} ms`);
    await recordHistory(workflowIds.sendMoney(created.id), 'sendMoney-status-query-asked-again');
  });
});

describe('send-money: a status answer is a callback like any other: forged ones move nothing', () => {
  afterEach(resetSimulator);

  it("a wrong token (404, not stored), the payout's own token, another query's ids, another amount, another payout, a query that failed, its queue timeout: none is applied; the genuine answer settles it", async () => {
    // Every status result lost until the forgeries are in: the run keeps asking.
    await setSimulatorMode({ callbacks: 'lose', statusResultsLost: 1_000 });
    const customer = await fundedCustomer(FUNDED);
    const row = await startPayout(customer, {
      resultWaitMs: 30_000,
      statusQueryAfterMs: 300,
      statusQueryIntervalMs: 1_000,
    });
    const query = await answeredQuery(row.id);
    const [payment] = await paymentsTo(customer.phone);
    const paid = {
      status: 'Completed',
      originator: row.id,
      amount: AMOUNT / 100,
      receipt: payment!.transactionId,
      phone: customer.phone,
    };
    assert.equal((await postStatus(query, statusResult(query, paid), 'x'.repeat(32))).status, 404);
    // A payout's result URL token does not open its status address.
    assert.equal((await postStatus(query, statusResult(query, paid), row.callback_token)).status, 404);
    const forged = [
      statusResult({ conversation_id: 'AG_20261201_forgedforgedforged00', originator_conversation_id: '1-2-3' }, paid),
      statusResult(
        { conversation_id: 'AG_20261201_forgedforgedforged00', originator_conversation_id: '1-2-3' },
        {
          resultCode: '2032',
        },
      ),
      statusResult(query, { ...paid, amount: 1 }),
      statusResult(query, { ...paid, originator: '00000000-0000-4000-8000-000000000000' }),
      statusResult(query, { ...paid, receipt: 'not-one' }),
      statusResult(query, { resultCode: 2001 }),
    ];
    for (const body of forged) assert.equal((await postStatus(query, body)).status, 200);
    // A query takes one answer: its copy is REPEATED; another answer with its ids is not believed.
    assert.equal((await postStatus(query, statusResult(query, { resultCode: 2001 }))).status, 200);
    assert.equal((await postStatus(query, statusResult(query, { resultCode: '2032' }))).status, 200);
    // The payout's own result URL takes a status-shaped body as a B2C result: not ours either.
    assert.equal((await postCallback('b2c/result', row, statusResult(query, paid))).status, 200);
    // The query's queue timeout says nothing of the payout: noted, and the run asks again.
    const timeout = await postStatus(query, statusResult(query, { resultCode: 'SVC0001' }), query.token, 'timeout');
    assert.equal(timeout.status, 200);
    const recorded = await until('the forgeries recorded', async () => {
      const rows = await callbacksRecorded(row.id);
      return rows.length >= forged.length + 4 && rows;
    });
    assert.deepEqual(
      recorded.map((r) => [r.kind, r.disposition, r.kind === 'B2C_STATUS' ? r.note : undefined]),
      [
        ['B2C_STATUS', 'UNVERIFIED', 'the ids of another query'],
        ['B2C_STATUS', 'UNVERIFIED', 'the ids of another query'],
        ['B2C_STATUS', 'UNVERIFIED', 'another amount'],
        ['B2C_STATUS', 'UNVERIFIED', 'another OriginatorConversationID'],
        ['B2C_STATUS', 'UNVERIFIED', 'a malformed receipt'],
        ['B2C_STATUS', 'NOTED', 'the query failed: 2001'],
        ['B2C_STATUS', 'REPEATED', null],
        ['B2C_STATUS', 'UNVERIFIED', 'another answer to a query answered query_failed'],
        ['B2C_RESULT', 'UNVERIFIED', undefined],
        ['B2C_STATUS_TIMEOUT', 'NOTED', undefined],
      ],
    );
    assert.equal((await transactionRow(row.id)).status, 'PENDING', 'nothing applied');
    assert.deepEqual(await journalKinds(row.id), ['HOLD']);

    await setSimulatorMode({ statusResultsLost: 0 });
    assert.deepEqual(await result(row.id), { status: 'POSTED' });
    assert.equal((await transactionRow(row.id)).mobilemoney_transaction_id, payment!.transactionId);
    assert.ok(await ledgerIsBalanced(harness().db));
  });
});

describe("send-money: a lost answer is confirmed by asking the provider, not by the only early result's word", () => {
  afterEach(resetSimulator);

  it('a forged early success, the only one, is not adopted: the status query, asked at once, posts the genuine receipt and ConversationID', async () => {
    await setSimulatorMode({ callbacks: 'lose' });
    const customer = await fundedCustomer(FUNDED);
    const row = await startPayout(
      customer,
      { resultWaitMs: 30_000, statusQueryAfterMs: 10_000, statusQueryIntervalMs: 1_000 },
      { answerLost: true },
    );
    const forgedEarly = b2cResult({
      originator: row.id,
      conversation: 'AG_20261201_forged00000000000000',
      code: 0,
      amount: AMOUNT / 100,
      receipt: 'FORGED1234',
      receiver: `${providerPhone(customer.phone)} - R`,
    });
    assert.equal((await postCallback('b2c/result', row, forgedEarly)).status, 200);
    const started = Date.now();
    assert.deepEqual(await result(row.id), { status: 'POSTED' });
    assert.ok(Date.now() - started < 10_000, 'asked at once, not after SEND_MONEY_STATUS_QUERY_AFTER');
    const [payment, ...again] = await paymentsTo(customer.phone);
    assert.equal(again.length, 0, 'paid once');
    const posted = await transactionRow(row.id);
    assert.deepEqual(
      [posted.mobilemoney_transaction_id, posted.conversation_id],
      [payment!.transactionId, payment!.conversationId],
    );
    assert.equal((await callbacksRecorded(row.id)).find((c) => c.kind === 'B2C_RESULT')?.disposition, 'EARLY');
    assert.deepEqual(await journalKinds(row.id), ['HOLD', 'PAYOUT']);
    await recordHistory(workflowIds.sendMoney(row.id), 'sendMoney-answer-lost-confirmed-by-status');
  });

  it('"not found" right after a lost answer proves nothing (the payout may still be in the queue), its queue timeout noted or not: released QUEUE_TIMEOUT only by a query asked SEND_MONEY_STATUS_QUERY_AFTER later', async () => {
    const customer = await newCustomer(7); // the simulator's queue timeout: accepted, never processed
    await fund(customer.current, FUNDED);
    const after = 3_000;
    const started = Date.now();
    const row = await startPayout(
      customer,
      { resultWaitMs: 30_000, statusQueryAfterMs: after, statusQueryIntervalMs: 1_000 },
      { answerLost: true, queueTimedOut: true },
    );
    const [first] = await statusAnswers(row.id, 'the first status answer');
    assert.equal(first!.disposition, 'SIGNALLED', 'a consistent "not found", handed to the run');
    assert.equal((await transactionRow(row.id)).status, 'PENDING', 'but not acted on');
    assert.deepEqual(await result(row.id), { status: 'FAILED', failureReason: 'QUEUE_TIMEOUT' });
    assert.ok(Date.now() - started >= after, 'released by a later query');
    assert.ok((await statusQueriesOf(row.id)).length >= 2);
    assert.deepEqual(await journalKinds(row.id), ['HOLD', 'RELEASE']);
    assert.deepEqual(await balanceOf(customer.current), { balance: FUNDED, held: 0, available: FUNDED });
    await recordHistory(workflowIds.sendMoney(row.id), 'sendMoney-answer-lost-not-found-later');
  });
});

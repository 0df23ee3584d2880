import { strict as assert } from 'node:assert';
import { buildApp } from '../../api/app';
import { startApi } from '../../api/server';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { MAX_CALLBACK_SIGNALS, MAX_EARLY_CALLBACK_SIGNALS } from '../../domain/mobile-money/callbacks';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import {
  b2cResult,
  balanceOf,
  checkoutRequestOf,
  callbacksRecorded,
  fundedCustomer,
  journalKinds,
  newCustomer,
  paidStkCallback,
  payerNumber,
  paymentsTo,
  postCallback,
  providerPhone,
  pushAccepted,
  pushesTo,
  resetSimulator,
  sendAccepted,
  sendCallbackNow,
  setSimulatorMode,
  settled,
  transactionRow,
  until,
} from '../support/money';
import { testRoutes } from '../support/test-routes';

/** The push once its request was answered and its CheckoutRequestID recorded. */
const accepted = checkoutRequestOf;
const payoutSent = (id: string) => until('payout accepted', async () => (await transactionRow(id)).conversation_id);
const recorded = (id: string, count = 1) =>
  until(`${count} callback(s) recorded`, async () => {
    const rows = await callbacksRecorded(id);
    return rows.length >= count && rows;
  });

/** A customer funded with 300,000 whose payout of 100,000 is with the provider, its result held back. */
async function pendingPayout() {
  await setSimulatorMode({ callbackDelayMs: 60_000 });
  const funded = 300_000;
  const customer = await fundedCustomer(funded);
  const recipient = payerNumber(0);
  const created = await sendAccepted(customer, 100_000, recipient);
  await payoutSent(created.id);
  return { funded, customer, recipient, created, row: await transactionRow(created.id) };
}

/**
 * A customer funded with 300,000 whose payout of 100,000 the provider has taken, its answer not
 * yet recorded (no ConversationID) and its result held back.
 */
async function payoutBeforeItsAnswer() {
  await setSimulatorMode({ payoutAnswerDelayMs: 2_000, callbackDelayMs: 60_000 });
  const customer = await fundedCustomer(300_000);
  const recipient = payerNumber(0);
  const created = await sendAccepted(customer, 100_000, recipient);
  const [payment] = await until('the payout at the provider', async () => {
    const payments = await paymentsTo(recipient);
    return payments.length > 0 && payments;
  });
  const row = await transactionRow(created.id);
  assert.equal(row.conversation_id, null, "before the payout's answer");
  return { customer, recipient, created, payment: payment!, row };
}

describe('attack run, finding 1: a callback moves money only when it is complete and consistent; anything else is confirmed with the provider first', () => {
  afterEach(resetSimulator);

  it('a paid push callback without CallbackMetadata (no amount, phone or receipt) posts nothing by itself: the status query is asked first, and the receipt is not taken', async () => {
    // Nothing is decided at the simulator until the forged callback; its first queries answer "being processed".
    await setSimulatorMode({ callbackDelayMs: 60_000, processingQueries: 2 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 50_000 });
    const checkoutRequestId = await accepted(created.id);
    const sent = await sendCallbackNow(checkoutRequestId, {
      Amount: null,
      MpesaReceiptNumber: null,
      TransactionDate: null,
      PhoneNumber: null,
      Balance: null,
    });
    assert.equal(sent.status, 200);
    assert.equal(
      (sent.body as { Body: { stkCallback: Record<string, unknown> } }).Body.stkCallback.CallbackMetadata,
      undefined,
      'the callback carries no metadata',
    );
    const [row] = await recorded(created.id);
    assert.equal(row!.disposition, 'CONFIRMING');
    assert.match(row!.note ?? '', /no amount; no phone; no receipt/);
    assert.equal(
      (await transactionRow(created.id)).status,
      'PENDING',
      'the provider is still "processing": nothing moved',
    );
    assert.deepEqual(await journalKinds(created.id), []);

    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', 'the status query confirmed the payment');
    assert.equal(done.mobilemoney_transaction_id, null, 'no receipt from an incomplete callback');
    assert.ok((await pushesTo(customer.phone))[0]!.queries >= 3, 'asked until the provider answered');
    assert.deepEqual(await balanceOf(customer.current), { balance: 50_000, held: 0, available: 50_000 });
  });

  it('a PhoneNumber in another form of the same number (0712…) is normalised, not dropped: the complete callback settles the push by itself', async () => {
    await setSimulatorMode({ callbackDelayMs: 60_000 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 40_000 });
    const checkoutRequestId = await accepted(created.id);
    await sendCallbackNow(checkoutRequestId, { PhoneNumber: `0${customer.phone.slice(4)}` });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED');
    const [push] = await pushesTo(customer.phone);
    assert.equal(done.mobilemoney_transaction_id, push!.receipt);
    assert.equal(push!.queries, 0, 'the callback alone settled it');
    assert.equal((await recorded(created.id))[0]!.disposition, 'SIGNALLED');
  });

  it('a masked PhoneNumber (2547*****670) cannot be checked: the push is confirmed by the status query before it is POSTED', async () => {
    await setSimulatorMode({ callbackDelayMs: 60_000 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 40_000 });
    const checkoutRequestId = await accepted(created.id);
    const phone = providerPhone(customer.phone);
    await sendCallbackNow(checkoutRequestId, { PhoneNumber: `${phone.slice(0, 4)}*****${phone.slice(-3)}` });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED');
    const [row] = await recorded(created.id);
    assert.equal(row!.disposition, 'CONFIRMING');
    assert.match(row!.note ?? '', /a phone in an unknown form/);
    assert.equal((await pushesTo(customer.phone))[0]!.queries, 1);
  });

  it('a forged failure code for a push the provider paid does not fail it: the status query says paid and the push is POSTED, never FAILED', async () => {
    await setSimulatorMode({ callbackDelayMs: 60_000 });
    const customer = await newCustomer(0); // the simulator pays this number
    const created = await pushAccepted(customer, { amount: 30_000 });
    const checkoutRequestId = await accepted(created.id);
    // Decides the push (paid at the provider), then calls back claiming the user cancelled.
    await sendCallbackNow(checkoutRequestId, { ResultCode: 1032, ResultDesc: 'Request cancelled by user' });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    assert.equal(done.failed_at, null);
    const [row] = await recorded(created.id);
    assert.equal(row!.disposition, 'CONFIRMING');
    assert.deepEqual(await journalKinds(created.id), ['COLLECTION']);
    assert.deepEqual(await balanceOf(customer.current), { balance: 30_000, held: 0, available: 30_000 });
  });

  it('with STK_PUSH_CONFIRM_SUCCESS even a complete, consistent paid callback is confirmed by the status query (receipt kept once confirmed)', async () => {
    const { deps } = harness();
    const strict = await startApi(
      buildApp({ ...deps, config: { ...deps.config, STK_PUSH_CONFIRM_SUCCESS: true } }, { extraRoutes: testRoutes() }),
      '127.0.0.1',
      0,
    );
    try {
      await setSimulatorMode({ callbacks: 'lose' }); // decided at once at the simulator; its callback is ours to send
      const customer = await newCustomer(0);
      const created = await pushAccepted(customer, { amount: 20_000 });
      await accepted(created.id);
      const [push] = await pushesTo(customer.phone);
      const row = await transactionRow(created.id);
      const complete = paidStkCallback(row, {
        amountShillings: 200,
        receipt: push!.receipt!,
        phone: customer.phone,
        transactionDate: push!.transactionDate,
      });
      assert.equal((await postCallback('stk', row, complete, strict.url)).status, 200);
      const [stored] = await recorded(created.id);
      assert.equal(stored!.disposition, 'CONFIRMING');
      assert.match(stored!.note ?? '', /STK_PUSH_CONFIRM_SUCCESS/);
      const done = await settled(customer.headers, created.id);
      assert.equal(done.status, 'POSTED');
      // Only a trigger's confirmation keeps a receipt (a scheduled query has none to keep).
      assert.equal(done.mobilemoney_transaction_id, push!.receipt);
      assert.ok((await pushesTo(customer.phone))[0]!.queries >= 1);
    } finally {
      await strict.close();
    }
  });

  it('a flood of forged B2C queue timeouts releases nothing and reaches no run: noted once, never signalled, and the result that follows posts the payout', async () => {
    const { funded, customer, recipient, created, row } = await pendingPayout();
    const timeout = b2cResult({ originator: row.id, conversation: row.conversation_id!, code: 'SVC0001' });
    for (let i = 0; i < 30; i++) assert.equal((await postCallback('b2c/timeout', row, timeout)).status, 200);
    const rows = await recorded(created.id, harness().config.CALLBACKS_STORED_PER_RESOURCE);
    assert.ok(rows.every((r) => r.disposition === 'NOTED'));
    const after = await transactionRow(created.id);
    assert.equal(after.status, 'PENDING');
    assert.ok(after.queue_timeout_at, 'noted for the failure reason, should the wait end');
    assert.deepEqual(await journalKinds(created.id), ['HOLD'], 'nothing released on a timeout');
    const history = await harness().client.workflow.getHandle(workflowIds.sendMoney(created.id)).fetchHistory();
    assert.equal(
      history.events?.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
      0,
      'no signal reached the run',
    );

    await sendCallbackNow(created.id); // the provider's genuine result: paid
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    assert.deepEqual(await journalKinds(created.id), ['HOLD', 'PAYOUT']);
    const fee = created.fee_amount.value;
    assert.deepEqual(await balanceOf(customer.current), {
      balance: funded - 100_000 - fee,
      held: 0,
      available: funded - 100_000 - fee,
    });
    assert.equal((await paymentsTo(recipient)).length, 1, 'paid once');
  });

  it('a complete B2C success for a payout whose ConversationID is unknown here (its answer not recorded, or lost) goes to the run as EARLY, which applies it only when its own answer brought that ConversationID: never applied here', async () => {
    const { created, row, recipient } = await pendingPayout();
    await harness().db('transactions').where({ id: row.id }).update({ conversation_id: null });
    const success = b2cResult({
      originator: row.id,
      conversation: 'AG_20261123_any',
      code: 0,
      amount: 1_000,
      receipt: 'FORGED1234',
      receiver: `${providerPhone(recipient)} - R`,
    });
    assert.equal((await postCallback('b2c/result', row, success)).status, 200);
    const [stored] = await recorded(created.id);
    assert.equal(stored!.disposition, 'EARLY');
    assert.match(stored!.note ?? '', /ConversationID is unknown/);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await transactionRow(created.id)).status, 'PENDING');
    assert.deepEqual(await journalKinds(created.id), ['HOLD']);
  });

  it('B2C results inconsistent with the payout (another ConversationID, another amount, no receipt) are recorded UNVERIFIED and never applied; the consistent one is', async () => {
    const { customer, recipient, created, row } = await pendingPayout();
    const receiver = `${providerPhone(recipient)} - Recipient`;
    const forged = [
      b2cResult({ originator: row.id, conversation: 'AG_20260101_forged', code: 2001 }),
      b2cResult({
        originator: row.id,
        conversation: row.conversation_id!,
        code: 0,
        amount: 1,
        receipt: 'SIMFORGED1',
        receiver,
      }),
      b2cResult({ originator: row.id, conversation: row.conversation_id!, code: 0, amount: 1_000, receiver }),
    ];
    for (const body of forged) assert.equal((await postCallback('b2c/result', row, body)).status, 200);
    const rows = await recorded(created.id, 3);
    assert.deepEqual(
      rows.map((r) => r.disposition),
      ['UNVERIFIED', 'UNVERIFIED', 'UNVERIFIED'],
    );
    assert.deepEqual(
      rows.map((r) => r.note),
      ['another ConversationID', 'another amount', 'no receipt'],
    );
    assert.equal((await transactionRow(created.id)).status, 'PENDING', 'no forged result applied');
    assert.deepEqual(await journalKinds(created.id), ['HOLD']);

    await sendCallbackNow(created.id);
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED');
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('an amount that is not a whole number of shillings ("0x64", 100.004) does not settle a push: confirmed by the status query', async () => {
    await setSimulatorMode({ callbackDelayMs: 60_000 });
    for (const amount of ['0x64', 100.004]) {
      const customer = await newCustomer(0);
      const created = await pushAccepted(customer, { amount: 10_000 });
      await sendCallbackNow(await accepted(created.id), { Amount: amount });
      const [row] = await recorded(created.id);
      assert.equal(row!.disposition, 'CONFIRMING', String(amount));
      assert.match(row!.note ?? '', /another amount/);
      assert.equal(
        (await settled(customer.headers, created.id)).mobilemoney_transaction_id,
        null,
        'no receipt kept from it',
      );
    }
  });

  it(`a flood of callbacks for one push reaches its run at most ${MAX_CALLBACK_SIGNALS} times (OVER_BUDGET beyond); the push's own status queries still settle it`, async () => {
    await setSimulatorMode({ callbackDelayMs: 60_000, processingQueries: 1_000 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 10_000 });
    await accepted(created.id);
    const row = await transactionRow(created.id);
    const refusal = {
      Body: {
        stkCallback: {
          MerchantRequestID: row.merchant_request_id,
          CheckoutRequestID: row.checkout_request_id,
          ResultCode: 1032,
          ResultDesc: 'forged',
        },
      },
    };
    for (let i = 0; i < MAX_CALLBACK_SIGNALS + 5; i++)
      assert.equal((await postCallback('stk', row, refusal)).status, 200);
    const rows = await recorded(created.id, MAX_CALLBACK_SIGNALS + 5);
    assert.deepEqual(
      rows.map((r) => r.disposition),
      [...Array<string>(MAX_CALLBACK_SIGNALS).fill('CONFIRMING'), ...Array<string>(5).fill('OVER_BUDGET')],
    );
    // Signals that arrive while a workflow task is running are buffered by the server and written
    // to the history when the task completes: count them once they are all there.
    const signalled = async () =>
      (await harness().client.workflow.getHandle(workflowIds.stkPush(created.id)).fetchHistory()).events?.filter(
        (e) => e.workflowExecutionSignaledEventAttributes,
      ).length ?? 0;
    await until('the signals written to the history', async () => (await signalled()) >= MAX_CALLBACK_SIGNALS);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(await signalled(), MAX_CALLBACK_SIGNALS);
    await setSimulatorMode({ processingQueries: 0 });
    await sendCallbackNow(row.checkout_request_id!); // decided (paid) at the provider; its callback is over the budget too
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', 'settled by its own status query');
  });

  it('a push whose answer was lost is settled only by a callback that proved the payment, confirmed by the provider; a refusal naming another push proves nothing, and one payment never settles two pushes', async () => {
    // Push requests answered 504 after taking effect (indeterminate), decided at once, no callbacks sent.
    await setSimulatorMode({ pushFailWith: 'timeout', hangMs: 1_000, failedPushesTakeEffect: true, callbacks: 'lose' });
    const [a, b] = [await newCustomer(0), await newCustomer(1)]; // a pays KES 100; b cancels
    const pushA = await pushAccepted(a, { amount: 10_000 });
    const pushB = await pushAccepted(b, { amount: 50_000 });
    const [simA] = await until(
      'a at the provider',
      async () => (await pushesTo(a.phone)).length === 1 && pushesTo(a.phone),
    );
    const rowB = await until('b answered (lost)', async () => {
      const row = await transactionRow(pushB.id);
      return (
        row.provider_request_attempted_at && Date.now() - row.provider_request_attempted_at.getTime() > 1_500 && row
      );
    });
    // A refusal naming a's push is no proof for b: nothing is asked about it.
    const refusal = {
      Body: {
        stkCallback: {
          MerchantRequestID: 'x',
          CheckoutRequestID: simA!.checkoutRequestId,
          ResultCode: 1032,
          ResultDesc: 'x',
        },
      },
    };
    assert.equal((await postCallback('stk', rowB, refusal)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await pushesTo(a.phone))[0]!.queries, 0, "a's push was not asked about on b's behalf");

    // a's genuine callback proves a's payment; the provider confirms it; a is POSTED with its id recorded.
    await sendCallbackNow(simA!.checkoutRequestId);
    const doneA = await settled(a.headers, pushA.id);
    assert.equal(doneA.status, 'POSTED');
    assert.equal(doneA.mobilemoney_transaction_id, simA!.receipt);
    assert.equal((await transactionRow(pushA.id)).checkout_request_id, simA!.checkoutRequestId);

    // The same payment claimed for b: another transaction's push, refused before any run hears of it.
    const claimed = paidStkCallback(
      { merchant_request_id: 'x', checkout_request_id: simA!.checkoutRequestId },
      { amountShillings: 500, receipt: 'SIMCLAIM01', phone: b.phone },
    );
    assert.equal((await postCallback('stk', rowB, claimed)).status, 200);
    assert.deepEqual(
      (await recorded(pushB.id, 2)).map((r) => r.disposition),
      ['CONFIRMING', 'MISMATCH'],
    );
    const doneB = await settled(b.headers, pushB.id, 30_000);
    assert.equal(doneB.status, 'FAILED');
    assert.equal(doneB.failure_reason, 'NO_RESULT', 'nothing proved b was paid or refused');
    assert.deepEqual(await journalKinds(pushB.id), []);
    assert.deepEqual(await balanceOf(b.current), { balance: 0, held: 0, available: 0 });
  });
});

describe("callback chaos finding: a B2C result that beats the payout's answer is judged by the run once the answer comes", () => {
  afterEach(resetSimulator);

  it('the genuine result, arriving before the answer was recorded, goes to the run as EARLY and is applied once the answer brings its ConversationID: POSTED', async () => {
    await setSimulatorMode({ payoutAnswerDelayMs: 1_500 });
    const customer = await fundedCustomer(300_000);
    const created = await sendAccepted(customer, 100_000, payerNumber(0));
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    const [stored] = await recorded(created.id);
    assert.deepEqual([stored!.kind, stored!.disposition], ['B2C_RESULT', 'EARLY']);
    assert.deepEqual(await journalKinds(created.id), ['HOLD', 'PAYOUT']);
    await recordHistory(workflowIds.sendMoney(created.id), 'sendMoney-early-result');
  });

  it(`a flood of forged early failures spends at most ${MAX_EARLY_CALLBACK_SIGNALS} of the payout's callback budget: the genuine result after the answer still settles it`, async () => {
    const { customer, created, payment, row } = await payoutBeforeItsAnswer();
    // A failure needs no amount or receipt to look consistent: only the token is needed to send one.
    for (let i = 0; i < MAX_CALLBACK_SIGNALS; i++) {
      const forged = b2cResult({ originator: row.id, conversation: `AG_20261126_forged_${i}`, code: 1 });
      assert.equal((await postCallback('b2c/result', row, forged)).status, 200);
    }
    const dispositions = (await recorded(created.id, MAX_CALLBACK_SIGNALS)).map((c) => c.disposition);
    assert.equal(dispositions.filter((d) => d === 'EARLY').length, MAX_EARLY_CALLBACK_SIGNALS);
    assert.equal(
      dispositions.filter((d) => d === 'OVER_BUDGET').length,
      MAX_CALLBACK_SIGNALS - MAX_EARLY_CALLBACK_SIGNALS,
    );
    await payoutSent(created.id);
    await sendCallbackNow(payment.originatorConversationId);
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    assert.deepEqual(await journalKinds(created.id), ['HOLD', 'PAYOUT']);
  });

  it("a push's callback address takes no B2C callback (404, nothing recorded): each kind of transaction has its own budget", async () => {
    const customer = await newCustomer(0);
    const push = await pushAccepted(customer, { amount: 10_000 });
    const row = await transactionRow(push.id);
    const body = b2cResult({ originator: row.id, conversation: 'AG_20261126_other', code: 1 });
    for (const kind of ['b2c/result', 'b2c/timeout'] as const)
      assert.equal((await postCallback(kind, row, body)).status, 404, kind);
    assert.deepEqual(await callbacksRecorded(push.id), []);
    const { callback_signals: spent } = await harness()
      .db('transactions')
      .where({ id: push.id })
      .first('callback_signals');
    assert.equal(spent, 0);
  });

  it('an early result naming another ConversationID is never applied; the genuine result settles the payout', async () => {
    const { customer, recipient, created, payment, row } = await payoutBeforeItsAnswer();
    const forged = b2cResult({
      originator: row.id,
      conversation: 'AG_20261126_forged',
      code: 0,
      amount: 1_000,
      receipt: 'FORGED1234',
      receiver: `${providerPhone(recipient)} - R`,
    });
    assert.equal((await postCallback('b2c/result', row, forged)).status, 200);
    assert.equal((await recorded(created.id))[0]!.disposition, 'EARLY');
    await payoutSent(created.id);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await transactionRow(created.id)).status, 'PENDING', 'the forged result was not applied');
    await sendCallbackNow(payment.originatorConversationId);
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    assert.equal(done.mobilemoney_transaction_id, payment.transactionId, 'the genuine receipt');
  });
});

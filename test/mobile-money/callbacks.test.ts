import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import {
  balanceOf,
  checkoutRequestOf,
  callbacksRecorded,
  journalOf,
  newCustomer,
  paidStkCallback,
  payerNumber,
  providerPhone,
  pushAccepted,
  pushesTo,
  refusedCallbacks,
  resetSimulator,
  sendCallbackNow,
  setSimulatorMode,
  settled,
  simulatorCallbacks,
  transactionRow,
  until,
} from '../support/money';

/** The transaction once the push request was answered and its CheckoutRequestID recorded. */
const accepted = checkoutRequestOf;

const receiptNumber = () => `SIM${randomBytes(8).toString('hex').toUpperCase().slice(0, 7)}`;

describe('protocol: push-prompt callbacks (not signed: token in the URL, checked against the request, idempotent)', () => {
  afterEach(resetSimulator);

  it('duplicate callbacks for one push post the collection exactly once (idempotent on CheckoutRequestID)', async () => {
    await setSimulatorMode({ callbacks: 'duplicate' });
    await Promise.all(
      [20_000, 30_000, 40_000].map(async (amount) => {
        const customer = await newCustomer(0);
        const created = await pushAccepted(customer, { amount });
        const done = await settled(customer.headers, created.id);
        assert.equal(done.status, 'POSTED', JSON.stringify(done));
        const recorded = await until('both callbacks recorded', async () => {
          const rows = await callbacksRecorded(created.id);
          return rows.length === 2 && rows;
        });
        for (const row of recorded) assert.ok(['SIGNALLED', 'LATE'].includes(row.disposition), row.disposition);
        assert.equal(recorded[0]!.raw, recorded[1]!.raw, 'the same callback twice');
        const [push] = await pushesTo(customer.phone);
        assert.equal(push!.callbacksSent, 2);
        const journal = await journalOf(created.id);
        assert.deepEqual(
          journal.map((e) => e.kind),
          ['COLLECTION'],
          'exactly one COLLECTION entry',
        );
        assert.deepEqual(await balanceOf(customer.current), { balance: amount, held: 0, available: amount });
        assert.equal(done.mobilemoney_transaction_id, push!.receipt);
      }),
    );
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('a callback sent the moment the push is accepted (callback delay 0) settles the push once, with its receipt', async () => {
    await setSimulatorMode({ callbackDelayMs: 0 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 60_000 });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    const [push, ...others] = await pushesTo(customer.phone);
    assert.equal(others.length, 0);
    assert.equal(done.mobilemoney_transaction_id, push!.receipt);
    // A callback that beats the push's answer has its request ids checked by the run once the
    // answer comes: it settles the push by itself.
    assert.equal(push!.queries, 0, 'the callback settled it, not the status query');
    assert.deepEqual(
      (await callbacksRecorded(created.id)).map((r) => r.disposition),
      ['SIGNALLED'],
    );
    assert.deepEqual(
      (await journalOf(created.id)).map((e) => e.kind),
      ['COLLECTION'],
    );
    assert.deepEqual(await balanceOf(customer.current), { balance: 60_000, held: 0, available: 60_000 });
  });

  it('a callback that arrives before the push request was answered (then answered 504: indeterminate) is confirmed by the status query and settles the push with its receipt; it is never pushed again', async () => {
    const hangMs = 1_500;
    await setSimulatorMode({ pushFailWith: 'timeout', hangMs, failedPushesTakeEffect: true, callbackDelayMs: 50 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 70_000 });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));

    const pushes = await pushesTo(customer.phone);
    assert.equal(pushes.length, 1, 'pushed once, not again after the indeterminate answer');
    const push = pushes[0]!;
    assert.equal(push.answeredWith, 'timeout');
    assert.equal(push.queries, 1, 'the run never learned its request ids: the callback is confirmed by one query');
    const [callback] = (await simulatorCallbacks()).filter((c) => c.id === push.checkoutRequestId);
    assert.ok(callback && callback.status === 200, 'the callback was delivered');
    assert.ok(
      Date.parse(callback.at) < Date.parse(push.receivedAt) + hangMs,
      'the callback came while the push request was still unanswered',
    );

    const row = await transactionRow(created.id);
    // The push step never learned it; the settlement recorded the push id that proved the payment.
    assert.equal(row.checkout_request_id, push.checkoutRequestId);
    await recordHistory(workflowIds.stkPush(created.id), 'stkPush-lost-answer-confirmed-by-query');
    assert.ok(row.provider_request_attempted_at);
    assert.equal(done.mobilemoney_transaction_id, push.receipt);
    // Complete and consistent as far as the route could see: handed over as a result, which the
    // run, knowing no ids of its own, confirmed by the status query.
    assert.deepEqual(
      (await callbacksRecorded(created.id)).map((r) => r.disposition),
      ['SIGNALLED'],
    );
    assert.deepEqual(
      (await journalOf(created.id)).map((e) => e.kind),
      ['COLLECTION'],
    );
    assert.deepEqual(await balanceOf(customer.current), { balance: 70_000, held: 0, available: 70_000 });
  });

  it('a late callback after the push failed is recorded LATE, a late paid one PAID_AFTER_FAILURE (to reconcile): nothing is posted and the transaction stays FAILED', async () => {
    await setSimulatorMode({ callbacks: 'lose' });
    const customer = await newCustomer(1);
    const created = await pushAccepted(customer, { amount: 50_000 });
    const failed = await settled(customer.headers, created.id);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.failure_reason, 'CANCELLED_BY_USER');
    const checkoutRequestId = (await transactionRow(created.id)).checkout_request_id!;

    // The real (cancelled) callback, late; then one claiming the payment went through after all.
    const genuine = await sendCallbackNow(checkoutRequestId);
    const paidLate = await sendCallbackNow(checkoutRequestId, {
      ResultCode: 0,
      ResultDesc: 'The service request is processed successfully.',
      Amount: 500,
      MpesaReceiptNumber: receiptNumber(),
      TransactionDate: 20260101120000,
      PhoneNumber: Number(providerPhone(customer.phone)),
    });
    assert.equal(genuine.status, 200, 'a late callback is still acknowledged');
    assert.equal(paidLate.status, 200);
    assert.deepEqual(
      (await callbacksRecorded(created.id)).map((r) => r.disposition),
      ['LATE', 'PAID_AFTER_FAILURE'],
    );

    const after = await call('GET', `/v1/transactions/${created.id}`, { headers: customer.headers });
    assert.equal(after.body.status, 'FAILED');
    assert.equal(after.body.failure_reason, 'CANCELLED_BY_USER');
    assert.equal(after.body.failed_at, failed.failed_at);
    assert.equal(after.body.mobilemoney_transaction_id, null);
    assert.equal((await transactionRow(created.id)).result_code, '1032');
    assert.deepEqual(await journalOf(created.id), [], 'nothing posted');
    assert.deepEqual(await balanceOf(customer.current), { balance: 0, held: 0, available: 0 });
  });

  it('a paid callback with a wrong amount (or another phone) moves no money by itself: recorded CONFIRMING, the status query settles the push (without its receipt)', async () => {
    // The decision is far off: only the callbacks sent below, and then the status query (whose
    // first answers are "being processed", leaving time to look at the PENDING transaction), exist.
    await setSimulatorMode({ callbackDelayMs: 60_000, processingQueries: 2 });
    const cases = [
      { name: 'wrong amount', overrides: { Amount: 1 } },
      { name: 'another phone', overrides: { PhoneNumber: Number(providerPhone(payerNumber(0))) } },
    ];
    await Promise.all(
      cases.map(async ({ name, overrides }) => {
        const customer = await newCustomer(0);
        const created = await pushAccepted(customer, { amount: 50_000 });
        const checkoutRequestId = await accepted(created.id);
        const sent = await sendCallbackNow(checkoutRequestId, overrides);
        assert.equal(sent.status, 200, name);
        assert.deepEqual(
          (await callbacksRecorded(created.id)).map((r) => r.disposition),
          ['CONFIRMING'],
          name,
        );
        const meanwhile = await call('GET', `/v1/transactions/${created.id}`, { headers: customer.headers });
        assert.equal(meanwhile.body.status, 'PENDING', `${name}: not acted on`);

        const done = await settled(customer.headers, created.id);
        assert.equal(done.status, 'POSTED', `${name}: ${JSON.stringify(done)}`);
        assert.equal(done.mobilemoney_transaction_id, null, `${name}: the mismatched callback's receipt is not taken`);
        const [push] = await pushesTo(customer.phone);
        assert.ok(push!.queries >= 1, `${name}: settled by the status query`);
        const journal = await journalOf(created.id);
        assert.deepEqual(
          journal.map((e) => e.kind),
          ['COLLECTION'],
          name,
        );
        assert.deepEqual(
          journal[0]!.legs.map((l) => Math.abs(l.amount)),
          [50_000, 50_000],
          `${name}: the requested amount is posted`,
        );
        assert.deepEqual(await balanceOf(customer.current), { balance: 50_000, held: 0, available: 50_000 }, name);
      }),
    );
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('a callback with a wrong token is refused 404, counted and not stored; the push is settled by its real result', async () => {
    await setSimulatorMode({ callbacks: 'lose' });
    const customer = await newCustomer(1); // cancels
    const created = await pushAccepted(customer, { amount: 50_000 });
    await accepted(created.id);
    const row = await transactionRow(created.id);
    const forged = paidStkCallback(row, { amountShillings: 500, receipt: receiptNumber(), phone: customer.phone });
    const base = '/v1/transactions/mobilemoney/callbacks/stk';
    const refusedBefore = await refusedCallbacks('token');
    const wrongToken = await call('POST', `${base}/${created.id}/${randomBytes(24).toString('base64url')}`, {
      json: forged,
    });
    assert.equal(wrongToken.status, 404, wrongToken.text);
    // One character off (never the same character: that would be the token itself).
    const last = row.callback_token.at(-1) === 'x' ? 'y' : 'x';
    const nearlyRight = await call('POST', `${base}/${created.id}/${row.callback_token.slice(0, -1)}${last}`, {
      json: forged,
    });
    assert.equal(nearlyRight.status, 404, nearlyRight.text);
    const unknownId = randomUUID();
    const noSuchTransaction = await call('POST', `${base}/${unknownId}/${row.callback_token}`, { json: forged });
    assert.equal(noSuchTransaction.status, 404, noSuchTransaction.text);
    assert.deepEqual(await callbacksRecorded(created.id), [], 'nothing stored');
    assert.deepEqual(await callbacksRecorded(unknownId), []);
    assert.equal(await refusedCallbacks('token'), refusedBefore + 3, 'each refusal counted');

    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'FAILED', 'the forged payment was not acted on');
    assert.equal(done.failure_reason, 'CANCELLED_BY_USER');
    assert.equal(done.mobilemoney_transaction_id, null);
    assert.deepEqual(await journalOf(created.id), []);
    assert.deepEqual(await balanceOf(customer.current), { balance: 0, held: 0, available: 0 });
  });
});

import { strict as assert } from 'node:assert';
import { accountBalance, ledgerAccounts, ledgerIsBalanced } from '../../db/ledger/ledger';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call, type Reply } from '../support/http';
import { allocated, newBorrower, takeLoan } from '../support/loans';
import {
  balanceOf,
  callbacksRecorded,
  insertStkPushTransaction,
  journalOf,
  mobileMoneyActivities,
  money,
  newCustomer,
  payerNumber,
  pushAccepted,
  pushesTo,
  resetSimulator,
  setSimulatorMode,
  settled,
  simulatorCallbacks,
  stkPush,
  transactionRow,
  until,
} from '../support/money';

type Customer = Awaited<ReturnType<typeof newCustomer>>;

/** A refused request: 400 BAD_REQUEST (the plain error family), and nothing created or pushed. */
async function assertRefusedBeforeAnything(reply: Reply, customer: Customer, phone: string, description: RegExp) {
  assert.equal(reply.status, 400, reply.text);
  assert.equal(reply.body.code, 'BAD_REQUEST');
  assert.match(reply.body.description, description);
  const rows = await harness().db('transactions').whereIn('account_id', [customer.current, customer.credit]);
  assert.equal(rows.length, 0, 'no transaction is created');
  assert.deepEqual(await pushesTo(phone), [], 'nothing is pushed');
}

describe('spec 4.4: POST /v1/transactions/mobilemoney/stk-push', () => {
  it('a push that completes: 201 PENDING, then POSTED with the receipt, and the deposit in the ledger', async () => {
    const customer = await newCustomer(0);
    const reply = await stkPush(customer.headers, {
      account_id: customer.current,
      amount: money(150_000),
      mobile_number: customer.phone,
    });
    assert.equal(reply.status, 201, reply.text);
    assert.equal(reply.body.status, 'PENDING');
    assert.match(reply.body.resource_id, /^trx_/);
    assert.deepEqual(reply.body.amount, money(150_000));
    assert.deepEqual(reply.body.fee_amount, money(0));
    assert.ok(reply.body.transacted_at);
    assert.equal(reply.headers.get('location'), `/v1/transactions/${reply.body.id}`);
    const done = await settled(customer.headers, reply.body.id);
    assert.equal(done.status, 'POSTED');
    await recordHistory(workflowIds.stkPush(reply.body.id), 'stkPush-callbacks-are-triggers');
    assert.ok(done.mobilemoney_transaction_id);
    assert.ok(done.confirmed_at && done.posted_at);
    assert.equal(done.failed_at, null);
    assert.equal(done.failure_reason, null);
    const balance = await accountBalance(harness().db, customer.current);
    assert.equal(balance.available, 150_000);
    assert.ok(await ledgerIsBalanced(harness().db));

    // The provider saw one push of KES 1,500 from the owner's number, and its receipt is ours.
    const [push, ...others] = await pushesTo(customer.phone);
    assert.equal(others.length, 0);
    assert.equal(push!.amount, 1_500);
    assert.equal(done.mobilemoney_transaction_id, push!.receipt);
    assert.deepEqual(await journalOf(reply.body.id), [
      {
        kind: 'COLLECTION',
        currency: 'KES',
        legs: [
          { account: ledgerAccounts.collections, amount: 150_000 },
          { account: ledgerAccounts.customer(customer.current), amount: -150_000 },
        ],
      },
    ]);
    const recorded = await until('callback recorded', async () => (await callbacksRecorded(reply.body.id)).at(0));
    assert.deepEqual([recorded.kind, recorded.disposition], ['STK', 'SIGNALLED']);
  });

  it('protocol: each refusal result, confirmed by the status query, fails the push with its failure_reason and posts nothing (1032 CANCELLED_BY_USER, 1037 PHONE_UNREACHABLE, 1 INSUFFICIENT_FUNDS, 2001 WRONG_PIN, 1019 EXPIRED)', async () => {
    const cases = [
      { digit: 1, resultCode: '1032', reason: 'CANCELLED_BY_USER' },
      { digit: 2, resultCode: '1037', reason: 'PHONE_UNREACHABLE' },
      { digit: 3, resultCode: '1', reason: 'INSUFFICIENT_FUNDS' },
      { digit: 4, resultCode: '2001', reason: 'WRONG_PIN' },
      { digit: 5, resultCode: '1019', reason: 'EXPIRED' },
      // A string ResultCode the table does not know is a provider error, not a crash.
      { digit: 6, resultCode: 'SFC_IC0003', reason: 'PROVIDER_ERROR' },
    ];
    await Promise.all(
      cases.map(async ({ digit, resultCode, reason }) => {
        const customer = await newCustomer(digit);
        const created = await pushAccepted(customer);
        const done = await settled(customer.headers, created.id);
        assert.equal(done.status, 'FAILED', `${reason}: ${JSON.stringify(done)}`);
        assert.equal(done.failure_reason, reason);
        assert.ok(done.failed_at, reason);
        assert.equal(done.confirmed_at, null, reason);
        assert.equal(done.posted_at, null, reason);
        assert.equal(done.mobilemoney_transaction_id, null, reason);
        assert.equal((await transactionRow(created.id)).result_code, resultCode);
        assert.deepEqual(await journalOf(created.id), [], `${reason}: nothing is posted`);
        assert.deepEqual(await balanceOf(customer.current), { balance: 0, held: 0, available: 0 }, reason);
        const recorded = await until(`${reason} callback recorded`, async () =>
          (await callbacksRecorded(created.id)).at(0),
        );
        // A refusal callback is a trigger: the run asked the status query before failing the push.
        assert.equal(recorded.disposition, 'CONFIRMING', reason);
        assert.match(recorded.note ?? '', /a refusal is confirmed by the status query/, reason);
        const pushes = await pushesTo(customer.phone);
        assert.equal(pushes.length, 1, `${reason}: pushed once`);
        assert.equal(String(pushes[0]!.resultCode), resultCode);
        assert.equal(pushes[0]!.queries, 1, `${reason}: asked once, at once`);
        if (digit === 1) await recordHistory(workflowIds.stkPush(created.id), 'stkPush-refusal-confirmed-by-query');
      }),
    );
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  describe('spec 4.4 validation', () => {
    it("an account_id of another user's account: 400, nothing created or pushed", async () => {
      const [customer, other] = await Promise.all([newCustomer(0), newCustomer(0)]);
      const reply = await stkPush(customer.headers, {
        account_id: other.current,
        amount: money(10_000),
        mobile_number: customer.phone,
      });
      await assertRefusedBeforeAnything(reply, other, customer.phone, /No such account/);
      const credit = await stkPush(customer.headers, {
        account_id: other.credit,
        amount: money(10_000),
        mobile_number: payerNumber(0),
      });
      assert.equal(credit.status, 400, credit.text);
      assert.equal((await harness().db('transactions').where({ account_id: other.credit })).length, 0);
    });

    it('an amount that is not a multiple of 100 (whole shillings): 400, nothing created or pushed', async () => {
      const customer = await newCustomer(0);
      for (const value of [10_050, 1, 99]) {
        const reply = await stkPush(customer.headers, {
          account_id: customer.current,
          amount: money(value),
          mobile_number: customer.phone,
        });
        await assertRefusedBeforeAnything(reply, customer, customer.phone, /multiple of 100/);
      }
    });

    it('a mobile number not in international format (leading plus and country code): 400, nothing created or pushed', async () => {
      const customer = await newCustomer(0);
      const local = `0${customer.phone.slice(4)}`; // 07XXXXXXXX
      for (const mobile_number of [
        local,
        customer.phone.slice(1),
        `00${customer.phone.slice(1)}`,
        `${customer.phone.slice(0, 7)} ${customer.phone.slice(7)}`,
      ]) {
        const reply = await stkPush(customer.headers, {
          account_id: customer.current,
          amount: money(10_000),
          mobile_number,
        });
        await assertRefusedBeforeAnything(reply, customer, customer.phone, /mobile_number/);
      }
      // International, but not a number the provider carries (Tanzania): refused as well.
      const foreign = await stkPush(customer.headers, {
        account_id: customer.current,
        amount: money(10_000),
        mobile_number: '+255712345670',
      });
      await assertRefusedBeforeAnything(foreign, customer, '+255712345670', /Kenyan mobile numbers/);
    });

    it("a current-account deposit from a number that is not the owner's: 400, nothing created or pushed", async () => {
      const customer = await newCustomer(0);
      const stranger = payerNumber(0);
      const reply = await stkPush(customer.headers, {
        account_id: customer.current,
        amount: money(10_000),
        mobile_number: stranger,
      });
      await assertRefusedBeforeAnything(reply, customer, stranger, /account owner's registered number/);
    });

    it('a credit-account repayment from any payer number: 201, POSTED to the credit account and passed on to the loan', async () => {
      const customer = await newBorrower({ funds: 100_000 });
      await takeLoan(customer, { amount: 100_000, tenure: 2 });
      const current = await balanceOf(customer.current);
      const payer = payerNumber(0);
      const created = await pushAccepted(customer, { account: customer.credit, phone: payer, amount: 25_000 });
      const done = await settled(customer.headers, created.id);
      assert.equal(done.status, 'POSTED', JSON.stringify(done));
      assert.equal(done.details.account_id, customer.credit);
      await allocated(created.id);
      assert.deepEqual(await balanceOf(customer.credit), { balance: 0, held: 0, available: 0 });
      assert.deepEqual(await balanceOf(customer.current), current, 'the current account is not touched');
      const pushes = await pushesTo(payer);
      assert.equal(pushes.length, 1, 'the payer number was pushed');
      assert.deepEqual(await pushesTo(customer.phone), [], "the owner's number was not");
      assert.ok(await ledgerIsBalanced(harness().db));
    });
  });

  it('details: a paybill push by default; with MOBILE_MONEY_TILL_NUMBER set, a Buy Goods push to that till (type BUY_GOODS, till_number)', async () => {
    const customer = await newCustomer(0);
    const paybill = await pushAccepted(customer, { amount: 10_000 });
    const { config } = harness();
    config.MOBILE_MONEY_TILL_NUMBER = '654321';
    let tillPush;
    try {
      tillPush = await pushAccepted(customer, { amount: 20_000 });
    } finally {
      config.MOBILE_MONEY_TILL_NUMBER = undefined;
    }
    const [paybillDone, tillDone] = await Promise.all([
      settled(customer.headers, paybill.id),
      settled(customer.headers, tillPush.id),
    ]);
    assert.equal(paybillDone.details.type, 'PAYBILL');
    assert.equal(paybillDone.details.paybill_number, config.MOBILE_MONEY_SHORT_CODE);
    assert.deepEqual(
      [tillDone.status, tillDone.details.type, tillDone.details.till_number],
      ['POSTED', 'BUY_GOODS', '654321'],
    );
    const pushes = await pushesTo(customer.phone);
    const byAmount = new Map(pushes.map((p) => [p.amount, p]));
    assert.deepEqual(
      [byAmount.get(100)?.transactionType, byAmount.get(100)?.partyB],
      ['CustomerPayBillOnline', config.MOBILE_MONEY_SHORT_CODE],
    );
    assert.deepEqual(
      [byAmount.get(200)?.transactionType, byAmount.get(200)?.partyB],
      ['CustomerBuyGoodsOnline', '654321'],
    );
  });

  it("GET /v1/transactions/{id} (id or resource_id) of another user's transaction: 404, and the owner still reads it", async () => {
    const [owner, other] = await Promise.all([newCustomer(0), newCustomer(0)]);
    const created = await pushAccepted(owner);
    const foreign = await call('GET', `/v1/transactions/${created.id}`, { headers: other.headers });
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(foreign.body.code, 'NOT_FOUND');
    assert.ok(!foreign.text.includes(created.resource_id), 'nothing of the transaction shows');
    const done = await settled(owner.headers, created.id);
    assert.equal(done.status, 'POSTED');
    assert.equal((await call('GET', `/v1/transactions/${created.id}`, { headers: other.headers })).status, 404);
    // The resource_id reads the same transaction, under the same rule.
    const byResourceId = await call('GET', `/v1/transactions/${created.resource_id}`, { headers: owner.headers });
    assert.equal(byResourceId.status, 200);
    assert.equal(byResourceId.body.id, created.id);
    assert.equal(
      (await call('GET', `/v1/transactions/${created.resource_id}`, { headers: other.headers })).status,
      404,
    );
    const malformed = await call('GET', '/v1/transactions/not-a-transaction', { headers: owner.headers });
    assert.equal(malformed.status, 400, malformed.text);
  });
});

describe('protocol: when the push callback never comes, the status query settles the push', () => {
  afterEach(resetSimulator);

  it('a lost callback is resolved by the status query after the callback wait: paid → POSTED, cancelled → FAILED CANCELLED_BY_USER', async () => {
    await setSimulatorMode({ callbacks: 'lose' });
    const { config } = harness();
    const lostPush = async (digit: number) => {
      const customer = await newCustomer(digit);
      const created = await pushAccepted(customer, { amount: 30_000 });
      const done = await settled(customer.headers, created.id);
      const [push, ...others] = await pushesTo(customer.phone);
      assert.equal(others.length, 0);
      return { customer, created, done, push: push! };
    };
    const [paid, cancelled] = await Promise.all([lostPush(0), lostPush(1)]);
    assert.equal(paid.done.status, 'POSTED', JSON.stringify(paid.done));
    await recordHistory(workflowIds.stkPush(paid.created.id), 'stkPush-status-query-callbacks-are-triggers');
    // Confirmed by the status query, which carries no receipt.
    assert.equal(paid.done.mobilemoney_transaction_id, null);
    assert.deepEqual(
      (await journalOf(paid.created.id)).map((e) => e.kind),
      ['COLLECTION'],
    );
    assert.deepEqual(await balanceOf(paid.customer.current), { balance: 30_000, held: 0, available: 30_000 });
    assert.equal(cancelled.done.status, 'FAILED');
    assert.equal(cancelled.done.failure_reason, 'CANCELLED_BY_USER');
    assert.deepEqual(await journalOf(cancelled.created.id), []);

    const sent = await simulatorCallbacks();
    for (const { created, done, push } of [paid, cancelled]) {
      assert.ok(push.queries >= 1, 'the status query was asked');
      assert.equal(push.callbacksSent, 0);
      assert.ok(
        sent.filter((c) => c.id === push.checkoutRequestId).every((c) => c.lost === true),
        'no callback was delivered',
      );
      assert.deepEqual(await callbacksRecorded(created.id), [], 'no callback reached us');
      const settledAt = Date.parse(done.posted_at ?? done.failed_at);
      assert.ok(
        settledAt - Date.parse(done.transacted_at) >= config.STK_PUSH_CALLBACK_WAIT - 100,
        'the callback was waited for first',
      );
    }
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('protocol: a status query answering "being processed" is pending, not a failure: the push settles when the answer is final', async () => {
    await setSimulatorMode({ callbacks: 'lose', processingQueries: 3 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 40_000 });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    assert.equal(done.failure_reason, null);
    const [push] = await pushesTo(customer.phone);
    assert.ok(push!.queries >= 4, `three "being processed" answers, then the final one (asked ${push!.queries} times)`);
    assert.deepEqual(
      (await journalOf(created.id)).map((e) => e.kind),
      ['COLLECTION'],
    );
    assert.deepEqual(await balanceOf(customer.current), { balance: 40_000, held: 0, available: 40_000 });
    assert.ok(await ledgerIsBalanced(harness().db));
  });
});

describe('durability: the settle step of a paid push is safe to run again', () => {
  it('settling twice posts one COLLECTION and keeps the receipt; a receipt already taken is left off, not retried forever; a FAILED push cannot be settled', async () => {
    const { db } = harness();
    const activities = mobileMoneyActivities();
    const customer = await newCustomer(0);
    const row = await insertStkPushTransaction(customer, 70_000);
    await activities.settleCollection(row.id, { receipt: 'SIMSETTLE01' });
    await activities.settleCollection(row.id, { receipt: 'SIMSETTLE02' }); // a rerun after a lost workflow task
    const posted = await transactionRow(row.id);
    assert.equal(posted.status, 'POSTED');
    assert.equal(posted.mobilemoney_transaction_id, 'SIMSETTLE01');
    assert.ok(posted.confirmed_at && posted.posted_at);
    assert.deepEqual(
      (await journalOf(row.id)).map((e) => e.kind),
      ['COLLECTION'],
    );
    // Another push paid with the same receipt (a provider anomaly): posted without it, not stuck retrying.
    const clash = await insertStkPushTransaction(customer, 30_000);
    await activities.settleCollection(clash.id, { receipt: 'SIMSETTLE01' });
    const clashed = await transactionRow(clash.id);
    assert.equal(clashed.status, 'POSTED');
    assert.equal(clashed.mobilemoney_transaction_id, null);
    assert.deepEqual(
      (await journalOf(clash.id)).map((e) => e.kind),
      ['COLLECTION'],
    );
    assert.equal(
      (await transactionRow(row.id)).mobilemoney_transaction_id,
      'SIMSETTLE01',
      'the first keeps its receipt',
    );

    const failed = await insertStkPushTransaction(customer, 10_000);
    await activities.failTransaction(failed.id, { resultCode: '1032' });
    await assert.rejects(
      activities.settleCollection(failed.id, {}),
      (error: Error) => error.name === 'ApplicationFailure' && /FAILED/.test(error.message),
    );
    assert.deepEqual(await journalOf(failed.id), []);
    assert.deepEqual(await balanceOf(customer.current), { balance: 100_000, held: 0, available: 100_000 });
    assert.ok(await ledgerIsBalanced(db));
  });

  it('two settlements at once (a rerun while the first is still in flight) post one COLLECTION, and neither fails', async () => {
    const activities = mobileMoneyActivities();
    const customer = await newCustomer(0);
    for (let round = 0; round < 5; round++) {
      const row = await insertStkPushTransaction(customer, 10_000);
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () => activities.settleCollection(row.id, { receipt: `SIMRACE${round}` })),
      );
      assert.deepEqual(outcomes, ['POSTED', 'POSTED', 'POSTED', 'POSTED']);
      assert.equal((await transactionRow(row.id)).status, 'POSTED');
      assert.deepEqual(
        (await journalOf(row.id)).map((e) => e.kind),
        ['COLLECTION'],
      );
    }
    assert.deepEqual(await balanceOf(customer.current), { balance: 50_000, held: 0, available: 50_000 });
    assert.ok(await ledgerIsBalanced(harness().db));
  });
});

describe('protocol: a push the provider refuses', () => {
  afterEach(resetSimulator);

  it('a push refused with a 4xx fails PUSH_REJECTED, nothing posted; the step run again reports the refusal, not an unknown fate, and sends nothing', async () => {
    await setSimulatorMode({ pushFailWith: 400 });
    const customer = await newCustomer(0);
    const created = await pushAccepted(customer, { amount: 10_000 });
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'FAILED', JSON.stringify(done));
    assert.equal(done.failure_reason, 'PUSH_REJECTED');
    assert.deepEqual(await journalOf(created.id), []);

    const activities = mobileMoneyActivities();
    const before = (await pushesTo(customer.phone)).length;
    const again = await activities.sendStkPush(created.id);
    assert.equal(again.state, 'rejected');
    assert.equal((await pushesTo(customer.phone)).length, before, 'nothing sent again');
  });
});

import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { feeFor } from '../../domain/mobile-money/transactions';
import { harness } from '../support/harness';
import type { Reply } from '../support/http';
import {
  balanceOf,
  fund,
  journalKinds,
  money,
  newCustomer,
  payerNumber,
  paymentsTo,
  pushesTo,
  sendMoney,
  settled,
  stkPush,
} from '../support/money';

const transactionsOf = (accountId: string) =>
  harness().db('transactions').where({ account_id: accountId }).select('id');

function assertConflict(reply: Reply, code: string) {
  assert.equal(reply.status, 409, reply.text);
  assert.equal(reply.body.code, code);
}

describe('spec 4.3 idempotency rule on the money routes (stk-push, send-money)', () => {
  it('spec 4.3 "identical retries replay it": 50 concurrent identical stk-push requests with one Idempotency-Key all answer the one transaction (201, none a 409), exactly one push at the provider', async () => {
    const customer = await newCustomer(0);
    const key = randomUUID();
    const body = { account_id: customer.current, amount: money(80_000), mobile_number: customer.phone };
    const replies = await Promise.all(Array.from({ length: 50 }, () => stkPush(customer.headers, body, key)));

    const statuses = replies.map((r) => r.status);
    assert.ok(
      statuses.every((s) => s === 201),
      `every identical request answered as the first: ${statuses.join()}`,
    );
    const created = replies;
    assert.ok(
      created.every((r) => r.text === created[0]!.text),
      'every 201 is the same answer',
    );
    assert.equal(
      created.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length,
      1,
      'one executed, the others replayed',
    );

    const transactions = await transactionsOf(customer.current);
    assert.deepEqual(transactions, [{ id: created[0]!.body.id }], 'one transaction');
    const done = await settled(customer.headers, created[0]!.body.id);
    assert.equal(done.status, 'POSTED');
    assert.equal((await pushesTo(customer.phone)).length, 1, 'exactly one push reached the provider');
    assert.deepEqual(await journalKinds(done.id), ['COLLECTION']);
    assert.deepEqual(await balanceOf(customer.current), { balance: 80_000, held: 0, available: 80_000 });

    // A retry after it all settled still gets the first answer, and pushes nothing.
    const late = await stkPush(customer.headers, body, key);
    assert.equal(late.status, 201);
    assert.equal(late.text, created[0]!.text);
    assert.equal((await pushesTo(customer.phone)).length, 1);
  });

  it('the same Idempotency-Key with a different body: 409 IDEMPOTENCY_KEY_REUSED, nothing more created or sent', async () => {
    const customer = await newCustomer(0);
    await fund(customer.current, 500_000);
    const recipient = payerNumber(0);

    const pushKey = randomUUID();
    const first = await stkPush(
      customer.headers,
      { account_id: customer.current, amount: money(10_000), mobile_number: customer.phone },
      pushKey,
    );
    assert.equal(first.status, 201, first.text);
    const otherAmount = await stkPush(
      customer.headers,
      { account_id: customer.current, amount: money(20_000), mobile_number: customer.phone },
      pushKey,
    );
    assertConflict(otherAmount, 'IDEMPOTENCY_KEY_REUSED');

    const sendKey = randomUUID();
    const payout = await sendMoney(
      customer.headers,
      { account_id: customer.current, amount: money(10_000), mobile_number: recipient },
      sendKey,
    );
    assert.equal(payout.status, 201, payout.text);
    const otherRecipient = await sendMoney(
      customer.headers,
      { account_id: customer.current, amount: money(10_000), mobile_number: payerNumber(0) },
      sendKey,
    );
    assertConflict(otherRecipient, 'IDEMPOTENCY_KEY_REUSED');

    const [pushed, paid] = await Promise.all([
      settled(customer.headers, first.body.id),
      settled(customer.headers, payout.body.id),
    ]);
    assert.equal(pushed.status, 'POSTED');
    assert.equal(paid.status, 'POSTED');
    assert.equal((await transactionsOf(customer.current)).length, 2, 'one transaction per key');
    assert.equal((await pushesTo(customer.phone)).length, 1);
    assert.equal((await paymentsTo(recipient)).length, 1);
    // 500_000 funded + 10_000 collected - 10_000 paid out - 0 fee (KES 100 is free).
    assert.deepEqual(await balanceOf(customer.current), { balance: 500_000, held: 0, available: 500_000 });
  });

  it('spec 8: an Idempotency-Key of 256 characters is refused 400 (nothing created); 255 characters is accepted', async () => {
    const customer = await newCustomer(0);
    const body = { account_id: customer.current, amount: money(10_000), mobile_number: customer.phone };
    const tooLong = await stkPush(customer.headers, body, 'k'.repeat(256));
    assert.equal(tooLong.status, 400, tooLong.text);
    assert.equal(tooLong.body.code, 'BAD_REQUEST');
    assert.match(tooLong.body.description, /idempotency-key/i);
    await fund(customer.current, 100_000);
    const tooLongSend = await sendMoney(customer.headers, { ...body, mobile_number: payerNumber(0) }, 'k'.repeat(256));
    assert.equal(tooLongSend.status, 400, tooLongSend.text);
    assert.equal((await transactionsOf(customer.current)).length, 0, 'nothing created');
    assert.deepEqual(await pushesTo(customer.phone), []);

    const longest = 'k'.repeat(255);
    const accepted = await stkPush(customer.headers, body, longest);
    assert.equal(accepted.status, 201, accepted.text);
    const replay = await stkPush(customer.headers, body, longest);
    assert.equal(replay.text, accepted.text);
    assert.equal((await settled(customer.headers, accepted.body.id)).status, 'POSTED');
    assert.equal((await transactionsOf(customer.current)).length, 1);
  });

  it('a replay is byte-identical to the first answer (raw response text), even after the transaction moved on', async () => {
    const customer = await newCustomer(0);
    await fund(customer.current, 200_000);
    const pushBody = { account_id: customer.current, amount: money(30_000), mobile_number: customer.phone };
    const sendBody = { account_id: customer.current, amount: money(50_000), mobile_number: payerNumber(0) };
    const [pushKey, sendKey] = [randomUUID(), randomUUID()];
    const firstPush = await stkPush(customer.headers, pushBody, pushKey);
    const firstSend = await sendMoney(customer.headers, sendBody, sendKey);
    assert.equal(firstPush.status, 201, firstPush.text);
    assert.equal(firstSend.status, 201, firstSend.text);
    assert.equal((await settled(customer.headers, firstPush.body.id)).status, 'POSTED');
    assert.equal((await settled(customer.headers, firstSend.body.id)).status, 'POSTED');

    for (const [first, again] of [
      [firstPush, await stkPush(customer.headers, pushBody, pushKey)],
      [firstSend, await sendMoney(customer.headers, sendBody, sendKey)],
    ] as const) {
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text, 'the same bytes');
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.equal(again.body.status, 'PENDING', 'the stored answer, not the current state');
    }
    assert.equal((await transactionsOf(customer.current)).length, 2);
    assert.equal((await pushesTo(customer.phone)).length, 1);
    // 200_000 + 30_000 collected - 50_000 sent - 500 fee.
    assert.deepEqual(await balanceOf(customer.current), { balance: 179_500, held: 0, available: 179_500 });
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('an execution repeated after its answer was lost (the API died before storing it) finds its own transaction: one push, one payout, the same id', async () => {
    const { db } = harness();
    const customer = await newCustomer(0);
    const amount = 50_000;
    await fund(customer.current, amount + feeFor('SEND_MONEY', amount)); // exactly one payout's worth
    // As if the first execution had died after starting its workflow: its key still RUNNING, its lock run out.
    const forgetAnswer = (key: string) =>
      db('idempotency_keys')
        .where({ key })
        .update({
          state: 'RUNNING',
          response_status: null,
          response_body: null,
          response_headers: null,
          locked_until: new Date(Date.now() - 1_000),
        });

    const pushKey = randomUUID();
    const pushBody = { account_id: customer.current, amount: money(20_000), mobile_number: customer.phone };
    const push = await stkPush(customer.headers, pushBody, pushKey);
    assert.equal(push.status, 201, push.text);
    const sendKey = randomUUID();
    const sendBody = { account_id: customer.current, amount: money(amount), mobile_number: payerNumber(0) };
    const payout = await sendMoney(customer.headers, sendBody, sendKey);
    assert.equal(payout.status, 201, payout.text);
    assert.equal((await settled(customer.headers, payout.body.id)).status, 'POSTED');
    await forgetAnswer(pushKey);
    await forgetAnswer(sendKey);

    const pushAgain = await stkPush(customer.headers, pushBody, pushKey);
    assert.equal(pushAgain.status, 201, pushAgain.text);
    assert.equal(pushAgain.body.id, push.body.id, 'the same transaction');
    assert.equal(pushAgain.headers.get('idempotent-replayed'), null, 'executed again, not replayed');
    // The payout already spent the whole balance: executed again, it answers with that payout instead of 400.
    const payoutAgain = await sendMoney(customer.headers, sendBody, sendKey);
    assert.equal(payoutAgain.status, 201, payoutAgain.text);
    assert.equal(payoutAgain.body.id, payout.body.id);
    assert.equal(payoutAgain.body.status, 'POSTED');

    assert.equal((await settled(customer.headers, push.body.id)).status, 'POSTED');
    assert.equal((await transactionsOf(customer.current)).length, 2, 'one push and one payout');
    assert.equal((await pushesTo(customer.phone)).length, 1, 'one push reached the provider');
    assert.equal((await paymentsTo(sendBody.mobile_number)).length, 1, 'one payout reached the provider');
    assert.deepEqual(await balanceOf(customer.current), { balance: 20_000, held: 0, available: 20_000 });
    assert.ok(await ledgerIsBalanced(db));
  });

  it('spec 4.3: the first call executes and its answer is stored whatever its status: a payout refused for insufficient funds, retried with its key after a deposit, replays the refusal and pays nothing', async () => {
    const customer = await newCustomer(0);
    const recipient = payerNumber(0);
    const key = `refused-${randomUUID()}`;
    const order = { account_id: customer.current, amount: money(50_000), mobile_number: recipient };
    const refused = await sendMoney(customer.headers, order, key);
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.description, /INSUFFICIENT_FUNDS/);
    await fund(customer.current, 100_000);
    const retried = await sendMoney(customer.headers, order, key);
    assert.equal(retried.status, 400, 'the stored refusal, not a second execution');
    assert.equal(retried.text, refused.text, 'byte for byte');
    assert.equal(retried.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await transactionsOf(customer.current), []);
    assert.deepEqual(await paymentsTo(recipient), []);
    // A new key is a new request: it executes, and pays.
    const fresh = await sendMoney(customer.headers, order, `fresh-${randomUUID()}`);
    assert.equal(fresh.status, 201, fresh.text);
    assert.equal((await settled(customer.headers, fresh.body.id)).status, 'POSTED');
  });

  it("a refusal the execution reached is stored too: another customer's account is refused (400), and its retry replays it", async () => {
    const { db } = harness();
    const [customer, other] = await Promise.all([newCustomer(0), newCustomer(0)]);
    const key = `not-mine-${randomUUID()}`;
    const order = { account_id: other.current, amount: money(1_000), mobile_number: payerNumber(0) };
    const notMine = await sendMoney(customer.headers, order, key);
    assert.equal(notMine.status, 400, notMine.text);
    assert.match(notMine.body.description, /No such account of the caller/);
    assert.equal((await db('idempotency_keys').where({ key })).length, 1, 'stored');
    const again = await sendMoney(customer.headers, order, key);
    assert.equal(again.text, notMine.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });
});

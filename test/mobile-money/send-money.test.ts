import { strict as assert } from 'node:assert';
import { lockAccount } from '../../db/accounts/accounts';
import { ledgerAccounts, ledgerIsBalanced } from '../../db/ledger/ledger';
import { feeFor } from '../../domain/mobile-money/transactions';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import {
  balanceOf,
  callbacksRecorded,
  fund,
  fundedCustomer,
  insertStkPushTransaction,
  journalKinds,
  journalOf,
  mobileMoneyActivities,
  money,
  newCustomer,
  payerNumber,
  paymentsTo,
  resetSimulator,
  sendAccepted,
  sendMoney,
  setSimulatorMode,
  settled,
  transactionRow,
  until,
} from '../support/money';

type Customer = Awaited<ReturnType<typeof newCustomer>>;

/** A failed payout: its hold given back in full, the balance as funded, the ledger balanced. */
async function assertReleased(customer: Customer, id: string, funded: number) {
  assert.deepEqual(await journalKinds(id), ['HOLD', 'RELEASE'], 'held, then released; nothing paid out');
  assert.deepEqual(await balanceOf(customer.current), { balance: funded, held: 0, available: funded });
  assert.ok(await ledgerIsBalanced(harness().db));
}

describe('spec 4.4: POST /v1/transactions/mobilemoney/send-money', () => {
  it('a payout that goes through: POSTED, the fee per the fee table, nothing left held, available = funded - amount - fee', async () => {
    // Amount bands (KES): up to 100 free; up to 1,500: 5; up to 5,000: 9; up to 20,000: 11; above: 13.
    const cases = [
      { amount: 10_000, fee: 0 },
      { amount: 100_000, fee: 500 },
      { amount: 150_000, fee: 500 },
      { amount: 150_100, fee: 900 },
      { amount: 2_000_000, fee: 1_100 },
      { amount: 2_500_000, fee: 1_300 },
    ];
    const funded = 3_000_000;
    await Promise.all(
      cases.map(async ({ amount, fee }) => {
        const customer = await fundedCustomer(funded);
        const recipient = payerNumber(0);
        const created = await sendAccepted(customer, amount, recipient);
        assert.deepEqual(created.fee_amount, money(fee), `fee for ${amount}`);
        assert.equal(feeFor('SEND_MONEY', amount), fee);
        const done = await settled(customer.headers, created.id);
        assert.equal(done.status, 'POSTED', JSON.stringify(done));
        assert.equal(done.failure_reason, null);
        assert.deepEqual(done.fee_amount, money(fee));
        assert.ok(done.confirmed_at && done.posted_at);

        const [payment, ...others] = await paymentsTo(recipient);
        assert.equal(others.length, 0, 'sent once');
        assert.equal(
          payment!.amount,
          amount / 100,
          'the recipient gets the amount, in whole shillings; the fee is ours',
        );
        assert.equal(payment!.originatorConversationId, created.id);
        assert.equal(done.mobilemoney_transaction_id, payment!.transactionId);

        assert.deepEqual(await balanceOf(customer.current), {
          balance: funded - amount - fee,
          held: 0,
          available: funded - amount - fee,
        });
        const journal = await journalOf(created.id);
        assert.deepEqual(
          journal.map((e) => e.kind),
          ['HOLD', 'PAYOUT'],
        );
        const payout = journal[1]!.legs;
        assert.deepEqual(payout, [
          { account: ledgerAccounts.hold(customer.current), amount: amount + fee },
          { account: ledgerAccounts.disbursements, amount: -amount },
          ...(fee > 0 ? [{ account: ledgerAccounts.feeIncome, amount: -fee }] : []),
        ]);
        const result = await until('B2C result recorded', async () => (await callbacksRecorded(created.id)).at(0));
        // EARLY when the result beat the payout's answer (the run applied it once the answer came).
        assert.equal(result.kind, 'B2C_RESULT');
        assert.ok(['SIGNALLED', 'EARLY'].includes(result.disposition), result.disposition);
        if (fee > 0 && amount === 100_000)
          await recordHistory(workflowIds.sendMoney(created.id), 'sendMoney-posted-queue-timeout-is-not-a-result');
      }),
    );
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('insufficient funds at our ledger: 400, nothing held, no transaction and nothing sent', async () => {
    const funded = 100_000;
    const customer = await fundedCustomer(funded);
    const recipient = payerNumber(0);
    // KES 1,000 plus its KES 5 fee is more than the KES 1,000 available.
    const reply = await sendMoney(customer.headers, {
      account_id: customer.current,
      amount: money(100_000),
      mobile_number: recipient,
    });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.body.code, 'BAD_REQUEST');
    assert.match(reply.body.description, /INSUFFICIENT_FUNDS/);
    assert.equal((await harness().db('transactions').where({ account_id: customer.current })).length, 0);
    assert.deepEqual(await balanceOf(customer.current), { balance: funded, held: 0, available: funded });
    assert.deepEqual(await paymentsTo(recipient), []);
    // Exactly the amount and fee available is enough.
    const exact = await sendAccepted(customer, 99_500, recipient);
    const done = await settled(customer.headers, exact.id);
    assert.equal(done.status, 'POSTED', JSON.stringify(done));
    assert.deepEqual(await balanceOf(customer.current), { balance: 0, held: 0, available: 0 });
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('two payouts that each fit but not together: the hold (under the account lock) lets exactly one through', async () => {
    const funded = 150_000;
    const customer = await fundedCustomer(funded);
    const recipients = [payerNumber(0), payerNumber(0)];
    const replies = await Promise.all(
      recipients.map((to) =>
        sendMoney(customer.headers, { account_id: customer.current, amount: money(100_000), mobile_number: to }),
      ),
    );
    const outcomes = await Promise.all(
      replies.map(async (reply) => {
        if (reply.status === 400) return 'REFUSED';
        assert.equal(reply.status, 201, reply.text);
        const done = await settled(customer.headers, reply.body.id);
        return done.status === 'FAILED' ? `FAILED ${done.failure_reason}` : done.status;
      }),
    );
    assert.deepEqual(
      outcomes.filter((o) => o === 'POSTED'),
      ['POSTED'],
      outcomes.join(),
    );
    assert.ok(
      outcomes.every((o) => ['POSTED', 'REFUSED', 'FAILED INSUFFICIENT_FUNDS'].includes(o)),
      outcomes.join(),
    );
    assert.deepEqual(await balanceOf(customer.current), { balance: 49_500, held: 0, available: 49_500 });
    const sent = (await Promise.all(recipients.map(paymentsTo))).flat();
    assert.equal(sent.length, 1, 'only one payout reached the provider');
    assert.ok(await ledgerIsBalanced(harness().db));
  });

  it('money is sent from a current account only: from the credit account, 400', async () => {
    const customer = await fundedCustomer(100_000);
    await fund(customer.credit, 100_000);
    const reply = await sendMoney(customer.headers, {
      account_id: customer.credit,
      amount: money(10_000),
      mobile_number: payerNumber(0),
    });
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.body.description, /current account/);
    assert.equal((await harness().db('transactions').where({ account_id: customer.credit })).length, 0);
  });

  it('protocol: a B2C failure result fails the payout and releases the hold (1 PROVIDER_INSUFFICIENT_FUNDS, 2040 RECIPIENT_NOT_REGISTERED)', async () => {
    const funded = 500_000;
    const cases = [
      { digit: 3, resultCode: '1', reason: 'PROVIDER_INSUFFICIENT_FUNDS' },
      { digit: 8, resultCode: '2040', reason: 'RECIPIENT_NOT_REGISTERED' },
      { digit: 4, resultCode: '2001', reason: 'PROVIDER_ERROR' },
    ];
    await Promise.all(
      cases.map(async ({ digit, resultCode, reason }) => {
        const customer = await fundedCustomer(funded);
        const recipient = payerNumber(digit);
        const created = await sendAccepted(customer, 100_000, recipient);
        const done = await settled(customer.headers, created.id);
        assert.equal(done.status, 'FAILED', `${reason}: ${JSON.stringify(done)}`);
        assert.equal(done.failure_reason, reason);
        assert.ok(done.failed_at);
        assert.equal(done.posted_at, null);
        const [payment] = await paymentsTo(recipient);
        assert.equal(String(payment!.resultCode), resultCode, reason);
        await assertReleased(customer, created.id, funded);
        const recorded = await until(`${reason} result recorded`, async () =>
          (await callbacksRecorded(created.id)).at(0),
        );
        assert.equal(recorded.kind, 'B2C_RESULT');
        assert.ok(['SIGNALLED', 'EARLY'].includes(recorded.disposition), recorded.disposition);
      }),
    );
  });

  it('protocol: a queue timeout (sent to QueueTimeOutURL) is noted, never applied: the status query asked SEND_MONEY_STATUS_QUERY_AFTER later finds the payout never processed, and it fails QUEUE_TIMEOUT with the hold released', async () => {
    const funded = 500_000;
    const customer = await fundedCustomer(funded);
    const recipient = payerNumber(7);
    const created = await sendAccepted(customer, 200_000, recipient);
    const recorded = await until('timeout recorded', async () => (await callbacksRecorded(created.id)).at(0));
    assert.deepEqual([recorded.kind, recorded.disposition], ['B2C_TIMEOUT', 'NOTED']);
    assert.equal(
      (await transactionRow(created.id)).status,
      'PENDING',
      'the fate is unknown: the hold stays until the provider says',
    );
    const done = await settled(customer.headers, created.id);
    assert.equal(done.status, 'FAILED', JSON.stringify(done));
    assert.equal(done.failure_reason, 'QUEUE_TIMEOUT');
    const [timedOut, failed] = [Date.parse(recorded.received_at), Date.parse(done.failed_at)];
    const { config } = harness();
    assert.ok(
      failed - Date.parse(done.transacted_at) >= config.SEND_MONEY_STATUS_QUERY_AFTER - 100 && failed > timedOut,
      'released on the status answer, not on the timeout',
    );
    const answers = (await callbacksRecorded(created.id)).filter((c) => c.kind === 'B2C_STATUS');
    assert.deepEqual(
      answers.map((c) => c.disposition),
      ['SIGNALLED'],
      'one "not found", from a query asked once the provider had time',
    );
    await recordHistory(workflowIds.sendMoney(created.id), 'sendMoney-queue-timeout-noted-then-not-found');
    const [payment] = await paymentsTo(recipient);
    assert.equal(payment!.state, 'timed_out');
    await assertReleased(customer, created.id, funded);
  });
});

describe("durability: a payout is never released on a retry's refusal while an earlier attempt may have paid", () => {
  afterEach(resetSimulator);

  it('a refused first attempt rejects the payout; the same refusal after an attempt of unknown fate leaves it to the result (accepted, hold kept)', async () => {
    const { db } = harness();
    const activities = mobileMoneyActivities();
    const customer = await fundedCustomer(100_000);
    await setSimulatorMode({ payoutFailWith: 400 }); // a definite refusal of each request
    const payout = async (triedBefore: boolean) => {
      const row = await insertStkPushTransaction(customer, 20_000);
      await db('transactions')
        .where({ id: row.id })
        .update({ type: 'SEND_MONEY', provider_request_attempted_at: triedBefore ? new Date() : null });
      return row.id;
    };
    const fresh = await payout(false);
    assert.deepEqual(await activities.sendB2c(fresh), { state: 'rejected', errorCode: '400.001.01' });
    const retried = await payout(true);
    // Its first answer never reached the row either: only the result can tell its ConversationID.
    assert.deepEqual(await activities.sendB2c(retried), { state: 'accepted', answerLost: true });
    assert.equal(
      (await transactionRow(retried)).status,
      'PENDING',
      'left to its result, its queue timeout or the wait',
    );
  });
});

describe('Temporal down at the start: a withdrawn payout is never held', () => {
  it("a payout withdrawn while its hold waits for the account's lock is not held: the hold reads it again under the lock", async () => {
    const { db } = harness();
    const customer = await fundedCustomer(300_000);
    const row = await insertStkPushTransaction(customer, 100_000);
    await db('transactions').where({ id: row.id }).update({ type: 'SEND_MONEY' });
    const waitingForLock = async () =>
      Number(
        (
          await db.raw(
            `select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          )
        ).rows[0].n,
      ) > 0;
    let hold: Promise<boolean> | undefined;
    // The API's withdraw takes the account's lock and deletes the row; the run's hold has read
    // the row already and waits for that lock.
    await db.transaction(async (trx) => {
      await lockAccount(trx, customer.current);
      hold = mobileMoneyActivities().holdFunds(row.id);
      hold.catch(() => {}); // judged below, once the lock is released
      await until('the hold waiting for the account lock', waitingForLock, 10_000);
      await trx('transactions').where({ id: row.id }).delete();
    });
    await assert.rejects(hold!, /withdrawn/);
    assert.deepEqual(await journalKinds(row.id), []);
    assert.deepEqual(await balanceOf(customer.current), { balance: 300_000, held: 0, available: 300_000 });
  });
});

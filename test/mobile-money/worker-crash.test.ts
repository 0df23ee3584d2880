import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { feeFor } from '../../domain/mobile-money/transactions';
import { workflowIds } from '../../workflows/ids';
import type { SendMoneyInput, StkPushInput } from '../../workflows/mobile-money/messages';
import { OrganizationId } from '../../workflows/search-attributes';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { spawnWorker } from '../support/processes';
import {
  balanceOf,
  callbacksRecorded,
  fundedCustomer,
  insertPayoutTransaction,
  insertStkPushTransaction,
  journalKinds,
  journalOf,
  mobileMoneyActivities,
  newCustomer,
  paymentsTo,
  pushesTo,
  resetSimulator,
  setSimulatorMode,
  settled,
  transactionRow,
  until,
} from '../support/money';

describe('durability: the worker process dies in the middle of a push', () => {
  let signingKey = '';
  before(async () => {
    signingKey = JSON.stringify(await generateServiceSigningKey());
  });
  afterEach(resetSimulator);

  it('a worker killed after the push was accepted, the callback arriving while no worker runs, and a new worker: exactly one posting', async function () {
    this.timeout(150_000);
    const { client, config } = harness();
    const taskQueue = `crash-${randomBytes(4).toString('hex')}`;
    const customer = await newCustomer(0);
    const amount = 120_000;
    const row = await insertStkPushTransaction(customer, amount);
    const workflowId = workflowIds.stkPush(row.id);

    const first = await spawnWorker(taskQueue, signingKey);
    const workers = [first];
    try {
      await first.running();
      // The push is accepted at once; its callback comes 4 s later, after the worker is gone.
      await setSimulatorMode({ callbackDelayMs: 4_000 });
      const input: StkPushInput = {
        transactionId: row.id,
        // Longer than the test: only the callback (a signal while no worker ran) can settle it.
        callbackWaitMs: 120_000,
        queryIntervalMs: config.STK_PUSH_QUERY_INTERVAL,
        queryDeadlineMs: config.STK_PUSH_QUERY_DEADLINE,
      };
      const handle = await client.workflow.start('stkPush', {
        taskQueue,
        workflowId,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [{ key: OrganizationId, value: row.organization_id }],
      });

      // The push reached the provider and the push step's result is in the history (an activity
      // completion, or a local activity's marker): kill now.
      const push = await until('the simulator has the push', async () => (await pushesTo(customer.phone)).at(0));
      await until('the push step recorded', async () => {
        const history = await handle.fetchHistory();
        return history.events?.some(
          (e) =>
            e.activityTaskCompletedEventAttributes ||
            e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
        );
      });
      first.child.kill('SIGKILL');
      const [, signal] = await first.exited;
      assert.equal(signal, 'SIGKILL');
      assert.equal((await transactionRow(row.id)).checkout_request_id, push.checkoutRequestId);

      // The callback reaches the API and is signalled to the workflow while no worker runs.
      const recorded = await until('callback recorded', async () => (await callbacksRecorded(row.id)).at(0), 15_000);
      assert.equal(recorded.disposition, 'SIGNALLED');
      assert.equal((await transactionRow(row.id)).status, 'PENDING', 'nothing settled it without a worker');
      assert.deepEqual(await journalOf(row.id), []);

      const second = await spawnWorker(taskQueue, signingKey);
      workers.push(second);
      await second.running();
      const result = await handle.result();
      assert.deepEqual(result, { status: 'POSTED' });

      const done = await settled(customer.headers, row.id);
      assert.equal(done.status, 'POSTED');
      const pushes = await pushesTo(customer.phone);
      assert.equal(pushes.length, 1, 'pushed once, not again by the new worker');
      assert.equal(pushes[0]!.queries, 0, 'settled by the callback, not the status query');
      assert.equal(done.mobilemoney_transaction_id, pushes[0]!.receipt);
      assert.deepEqual(
        (await journalOf(row.id)).map((e) => e.kind),
        ['COLLECTION'],
        'exactly one posting',
      );
      assert.deepEqual(await balanceOf(customer.current), { balance: amount, held: 0, available: amount });
      assert.ok(await ledgerIsBalanced(harness().db));
      await second.stop();
      assert.equal(second.child.exitCode, 0, second.output());
    } finally {
      for (const worker of workers)
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });

  it('a run whose worker was down past its query deadline asks the provider once more before giving up: the refusal, not NO_RESULT', async function () {
    this.timeout(150_000);
    const { client, config } = harness();
    const taskQueue = `stall-${randomBytes(4).toString('hex')}`;
    const customer = await newCustomer(1); // 1032: cancelled by the user
    const row = await insertStkPushTransaction(customer, 50_000);
    const workflowId = workflowIds.stkPush(row.id);
    // Decided at once, its callback lost: only the status query can tell.
    await setSimulatorMode({ callbacks: 'lose' });

    const first = await spawnWorker(taskQueue, signingKey);
    const workers = [first];
    try {
      await first.running();
      const input: StkPushInput = {
        transactionId: row.id,
        organizationId: row.organization_id,
        callbackWaitMs: 1_000,
        queryIntervalMs: config.STK_PUSH_QUERY_INTERVAL,
        queryDeadlineMs: 1_000,
      };
      const handle = await client.workflow.start('stkPush', {
        taskQueue,
        workflowId,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [{ key: OrganizationId, value: row.organization_id }],
      });
      await until('the push step recorded', async () => {
        const history = await handle.fetchHistory();
        return history.events?.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
      });
      first.child.kill('SIGKILL');
      await first.exited;
      // The whole wait, callback and queries, passes while no worker runs.
      await new Promise((resolve) => setTimeout(resolve, 4_000));

      const second = await spawnWorker(taskQueue, signingKey);
      workers.push(second);
      await second.running();
      assert.deepEqual(await handle.result(), { status: 'FAILED', failureReason: 'CANCELLED_BY_USER' });
      const pushes = await pushesTo(customer.phone);
      assert.equal(pushes.length, 1, 'pushed once');
      assert.equal(pushes[0]!.queries, 1, 'asked once, after the deadline, before giving up');
      const failed = await transactionRow(row.id);
      assert.deepEqual(
        [failed.status, failed.failure_reason, failed.result_code],
        ['FAILED', 'CANCELLED_BY_USER', '1032'],
      );
      await recordHistory(workflowId, 'stkPush-asked-after-deadline');
      await second.stop();
    } finally {
      for (const worker of workers)
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });
});

describe('durability: the worker dies after the provider took a payout, before its answer was recorded', () => {
  afterEach(resetSimulator);

  it('the retry is refused as a duplicate (the answer lost); the genuine result, the only early one, stands for it: POSTED, paid once, nothing handed back', async function () {
    this.timeout(60_000);
    const { client, db, taskQueue } = harness();
    const amount = 100_000;
    const fee = feeFor('SEND_MONEY', amount);
    const funded = 300_000;
    const customer = await fundedCustomer(funded);
    const row = await insertPayoutTransaction(customer, amount);
    // The result comes once the new run has taken over.
    await setSimulatorMode({ callbackDelayMs: 3_000 });
    // The dead worker's step: the request reached the provider; its answer never reached the row.
    assert.equal((await mobileMoneyActivities().sendB2c(row.id)).state, 'accepted');
    await db('transactions').where({ id: row.id }).update({ conversation_id: null });

    const workflowId = workflowIds.sendMoney(row.id);
    const input: SendMoneyInput = { transactionId: row.id, organizationId: row.organization_id, resultWaitMs: 120_000 };
    const handle = await client.workflow.start('sendMoney', { taskQueue, workflowId, args: [input] });
    assert.deepEqual(await handle.result(), { status: 'POSTED' });

    const [payment, ...again] = await paymentsTo(customer.phone);
    assert.equal(again.length, 0, 'paid once: the retry was refused as a duplicate');
    const posted = await transactionRow(row.id);
    assert.deepEqual(
      [posted.conversation_id, posted.mobilemoney_transaction_id],
      [payment!.conversationId, payment!.transactionId],
    );
    assert.deepEqual(
      (await callbacksRecorded(row.id)).map((c) => c.disposition),
      ['EARLY'],
    );
    assert.deepEqual(await journalKinds(row.id), ['HOLD', 'PAYOUT']);
    assert.deepEqual(await balanceOf(customer.current), {
      balance: funded - amount - fee,
      held: 0,
      available: funded - amount - fee,
    });
    assert.ok(await ledgerIsBalanced(db));
    await recordHistory(workflowId, 'sendMoney-answer-lost-early-result');
  });
});

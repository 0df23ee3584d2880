import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { DEMO } from '../../db/seeds/demo';
import { workflowIds } from '../../workflows/ids';
import type { StkPushInput } from '../../workflows/mobile-money/messages';
import { OrganizationId } from '../../workflows/search-attributes';
import { harness } from '../support/harness';
import { allocated, ledgerMismatches, loanRunInput, newBorrower, takeLoan } from '../support/loans';
import { insertStkPushTransaction, journalKinds, money, payerNumber, stkPush, until } from '../support/money';
import { spawnWorker } from '../support/processes';

describe('durability: the worker dies between a repayment’s posting and its allocation', () => {
  it('killed as the push is POSTED: a new worker allocates the repayment once, to the cent', async function () {
    this.timeout(150_000);
    const { client, db, config } = harness();
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 300_000, tenure: 3 });
    // The loan's run and the push's run both go to a worker process of their own, which the test
    // kills: the push's run allocates a repayment while the loan is on time, the loan's run when not.
    await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('moved to the test worker');
    const taskQueue = `repayment-crash-${randomBytes(4).toString('hex')}`;
    const signingKey = JSON.stringify(await generateServiceSigningKey());
    const input = await loanRunInput(loanId, 1000);
    const first = await spawnWorker(taskQueue, signingKey);
    const workers = [first];
    try {
      await first.running();
      await client.workflow.start('loan', { taskQueue, workflowId: workflowIds.loan(loanId), args: [input] });
      const organizationId = DEMO.organizations.demo.id;
      const row = await insertStkPushTransaction(
        { current: borrower.credit, phone: payerNumber(0), user: { organization_id: organizationId } },
        150_000,
      );
      await client.workflow.start('stkPush', {
        taskQueue,
        workflowId: workflowIds.stkPush(row.id),
        args: [
          {
            transactionId: row.id,
            organizationId,
            callbackWaitMs: config.STK_PUSH_CALLBACK_WAIT,
            queryIntervalMs: config.STK_PUSH_QUERY_INTERVAL,
            queryDeadlineMs: config.STK_PUSH_QUERY_DEADLINE,
            repayment: true,
          } satisfies StkPushInput,
        ],
        typedSearchAttributes: [{ key: OrganizationId, value: organizationId }],
      });
      await until(
        'the push posted',
        async () => (await db('transactions').where({ id: row.id }).first()).status === 'POSTED',
        20_000,
        10,
      );
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await spawnWorker(taskQueue, signingKey);
      workers.push(second);
      await second.running();
      await allocated(row.id, 30_000);
      assert.deepEqual(await client.workflow.getHandle(workflowIds.stkPush(row.id)).result(), { status: 'POSTED' });
      // A later repayment is allocated too: the account's lock was not left held.
      const later = await stkPush(borrower.headers, {
        account_id: borrower.credit,
        amount: money(1_000),
        mobile_number: payerNumber(0),
      });
      await allocated(later.body.id, 30_000);
      assert.equal((await db('loan_transactions').where({ transaction_id: row.id })).length, 1);
      const records = await db('installment_allocations').where({ event_id: row.id });
      assert.equal(
        records.reduce((sum, r) => sum + Number(r.allocated_amount), 0),
        150_000,
      );
      assert.deepEqual(await journalKinds(row.id), ['COLLECTION', 'REPAYMENT']);
      assert.deepEqual(await ledgerMismatches(), []);
      assert.ok(await ledgerIsBalanced(db));
      await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('test done');
      await second.stop();
    } finally {
      for (const worker of workers)
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });
});

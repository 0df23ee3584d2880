import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { allocated, ledgerMismatches, loanRunInput, newBorrower, takeLoan } from '../support/loans';
import { journalKinds, money, payerNumber, stkPush, until } from '../support/money';
import { spawnWorker } from '../support/processes';

describe('durability: the worker dies between a repayment’s posting and its allocation', () => {
  it('killed as the push is POSTED: a new worker allocates the repayment once, to the cent', async function () {
    this.timeout(150_000);
    const { client, db } = harness();
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 300_000, tenure: 3 });
    // The loan's run moves to a worker process of its own, which the test kills.
    await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('moved to the test worker');
    const taskQueue = `repayment-crash-${randomBytes(4).toString('hex')}`;
    const signingKey = JSON.stringify(await generateServiceSigningKey());
    const input = await loanRunInput(loanId, 1000);
    const first = await spawnWorker(taskQueue, signingKey);
    const workers = [first];
    try {
      await first.running();
      await client.workflow.start('loan', { taskQueue, workflowId: workflowIds.loan(loanId), args: [input] });
      const pushed = await stkPush(borrower.headers, {
        account_id: borrower.credit,
        amount: money(150_000),
        mobile_number: payerNumber(0),
      });
      assert.equal(pushed.status, 201, pushed.text);
      await until(
        'the push posted',
        async () => (await db('transactions').where({ id: pushed.body.id }).first()).status === 'POSTED',
        20_000,
        10,
      );
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await spawnWorker(taskQueue, signingKey);
      workers.push(second);
      await second.running();
      await allocated(pushed.body.id, 30_000);
      // A later repayment is allocated after it: the run handled the first one completely.
      const later = await stkPush(borrower.headers, {
        account_id: borrower.credit,
        amount: money(1_000),
        mobile_number: payerNumber(0),
      });
      await allocated(later.body.id, 30_000);
      assert.equal((await db('loan_transactions').where({ transaction_id: pushed.body.id })).length, 1);
      const records = await db('installment_allocations').where({ event_id: pushed.body.id });
      assert.equal(
        records.reduce((sum, r) => sum + Number(r.allocated_amount), 0),
        150_000,
      );
      assert.deepEqual(await journalKinds(pushed.body.id), ['COLLECTION', 'REPAYMENT']);
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

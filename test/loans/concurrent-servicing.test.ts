import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { DEMO } from '../../db/seeds/demo';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { applicantHeaders } from '../support/kyc';
import { ledgerMismatches, loanRunInput, newBorrower, repayAll, takeLoan } from '../support/loans';
import { journalKinds, until } from '../support/money';
import { spawnWorker } from '../support/processes';

const operator = () => applicantHeaders(DEMO.users.internal);

/** A waiver of 1.00 through the API, under its own Idempotency-Key. */
async function waive(credit: string, loanId: string, key: string) {
  return call('POST', `/v1/accounts/${credit}/installments/waivers`, {
    headers: { ...(await operator()), 'Idempotency-Key': `${key}-${loanId}` },
    json: { loan_id: loanId, amount: { value: 100, currency: 'KES' }, reason: `concurrent ${key}` },
  });
}

/** The loan run's history replays against the run's workflow bundle (throws on nondeterminism). */
async function replays(loanId: string) {
  const { client, workflowBundle } = harness();
  const history = await client.workflow.getHandle(workflowIds.loan(loanId)).fetchHistory();
  await Worker.runReplayHistory({ workflowBundle }, history, workflowIds.loan(loanId));
}

describe('every loan history replays, whatever the interleaving of its Updates, signals and timers', () => {
  it('five waivers at once and a worker restart: the run replays, the next waiver is answered, a repayment is allocated and closes the loan', async function () {
    this.timeout(180_000);
    const { client, db } = harness();
    const taskQueue = `concurrent-servicing-${randomBytes(4).toString('hex')}`;
    const signingKey = JSON.stringify(await generateServiceSigningKey());
    // Three loans, so that at least one sees its waivers' results land apart (the interleaving that broke replay).
    const loans = await Promise.all(
      [0, 1, 2].map(async () => {
        const borrower = await newBorrower();
        const { loanId } = await takeLoan(borrower, { amount: 300_000, tenure: 4 });
        return { borrower, loanId };
      }),
    );
    const first = await spawnWorker(taskQueue, signingKey);
    const workers = [first];
    try {
      await first.running();
      // Each loan's run moves to a worker process of the test's own, its days a second long.
      for (const { loanId } of loans) {
        await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('moved to the test worker');
        const input = await loanRunInput(loanId, 1000);
        await client.workflow.start('loan', { taskQueue, workflowId: workflowIds.loan(loanId), args: [input] });
      }
      // The runs wait on their first installment's due day; five waivers each arrive at once.
      const waived = await Promise.all(
        loans.flatMap(({ borrower, loanId }) => [0, 1, 2, 3, 4].map((n) => waive(borrower.credit, loanId, `w${n}`))),
      );
      for (const reply of waived) assert.equal(reply.status, 201, reply.text);
      for (const { loanId } of loans) await replays(loanId);

      // Restarted, the worker replays every run from its history: each goes on serving.
      first.child.kill('SIGKILL');
      await first.exited;
      const second = await spawnWorker(taskQueue, signingKey);
      workers.push(second);
      await second.running();
      for (const { borrower, loanId } of loans) {
        const next = await waive(borrower.credit, loanId, 'next');
        assert.equal(next.status, 201, next.text);
        await repayAll(borrower);
        await until(
          `loan ${loanId} repaid`,
          async () => (await db('loans').where({ id: loanId }).first()).status === 'REPAID',
          30_000,
        );
        assert.ok((await journalKinds(loanId)).includes('COLLATERAL_RELEASE'), 'the collateral released');
        await replays(loanId);
      }
      await recordHistory(workflowIds.loan(loans[0]!.loanId), 'loan-concurrent-waivers-one-at-a-time');
      assert.deepEqual(await ledgerMismatches(), []);
      assert.ok(await ledgerIsBalanced(db));
      await second.stop();
    } finally {
      for (const worker of workers)
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });
});

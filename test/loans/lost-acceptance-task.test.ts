import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { LoanActivities } from '../../activities';
import { findProduct, offerTerms } from '../../db/loans/products';
import { DEMO } from '../../db/seeds/demo';
import { workflowIds } from '../../workflows/ids';
import { acceptOfferUpdate, type LoanOfferInput, LoanOfferError, type TakenLoan } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';

/**
 * A workflow task is lost with its worker after its local activity made a loan for one
 * acceptance (A); the next worker does the task again with another acceptance (B) first, which
 * finds the offer taken by A, an acceptance this run never recorded. That interleaving cannot be
 * forced through the real service, so the run's activities are stubs here answering as Postgres
 * would then; the workflow, its Updates and the Temporal server are the real ones.
 */
describe('spec 4.3: an offer taken by an acceptance its run never recorded is finished, not abandoned', () => {
  it('the acceptance that finds it taken is refused TAKEN, and the run pays out the one that took it at once (once)', async function () {
    this.timeout(60_000);
    const { client, db, env, workflowBundle } = harness();
    const organizationId = DEMO.organizations.demo.id;
    const product = (await findProduct(db, organizationId, 'standard'))!;
    const applicationId = randomUUID();
    const input: LoanOfferInput = {
      organizationId,
      applicationId,
      loanAmount: 1_000_000,
      terms: offerTerms(product),
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      dayMs: 86_400_000,
    };
    const lost: TakenLoan & { acceptedBy: string } = {
      loanId: randomUUID(),
      accountId: randomUUID(),
      userId: randomUUID(),
      installments: [{ position: 1, dueDay: 7 }],
      acceptedBy: 'acceptance-a-whose-task-was-lost',
    };
    const calls: string[] = [];
    const activities: Partial<LoanActivities> = {
      // What Postgres answers B: the offer is ACCEPTED already (A's loan, made by the lost task).
      acceptLoanOffer: async () => (calls.push('acceptLoanOffer'), { outcome: 'not_open', status: 'ACCEPTED' }),
      closeLoanOffer: async () => (calls.push('closeLoanOffer'), { outcome: 'taken', ...lost }),
      disburseLoan: async (ref) => (calls.push(`disburseLoan ${ref.loanId}`), { disbursedAtMs: Date.now() }),
    };
    const taskQueue = `lost-acceptance-${randomBytes(4).toString('hex')}`;
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities });
    const workflowId = workflowIds.loanApplication(applicationId);
    await worker.runUntil(async () => {
      const handle = await client.workflow.start('loanApplication', { taskQueue, workflowId, args: [input] });
      const taken = { loanAmount: 500_000, tenure: 2, collateralAmount: 50_000 };
      await assert.rejects(
        handle.executeUpdate(acceptOfferUpdate, { args: [taken], updateId: 'acceptance-b' }),
        (error: unknown) =>
          error instanceof WorkflowUpdateFailedError &&
          error.cause instanceof ApplicationFailure &&
          error.cause.type === LoanOfferError.TAKEN,
      );
      assert.equal(await handle.result(), 'ACCEPTED');
      assert.deepEqual(calls, ['acceptLoanOffer', 'closeLoanOffer', `disburseLoan ${lost.loanId}`]);
      const loanRun = client.workflow.getHandle(workflowIds.loan(lost.loanId));
      assert.equal((await loanRun.describe()).status.name, 'RUNNING', "the loan's own run started");
      await loanRun.terminate('test done');
    });
    await recordHistory(workflowId, 'loanApplication-unrecorded-acceptance-finished-at-once');
  });
});

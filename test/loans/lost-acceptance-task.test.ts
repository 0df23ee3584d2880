import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { LoanActivities } from '../../activities';
import { createLoanActivities } from '../../activities/loans';
import { findProduct, offerTerms } from '../../db/loans/products';
import { DEMO } from '../../db/seeds/demo';
import { workflowIds } from '../../workflows/ids';
import { acceptOfferUpdate, type LoanOfferInput, LoanOfferError, type TakenLoan } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { newBorrower, offerFor } from '../support/loans';

const ORG = DEMO.organizations.demo.id;

/** The acceptOffer Update refused TAKEN. */
const refusedTaken = (error: unknown) =>
  error instanceof WorkflowUpdateFailedError &&
  error.cause instanceof ApplicationFailure &&
  error.cause.type === LoanOfferError.TAKEN;

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
        refusedTaken,
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

describe('spec 4.3: an offer is taken once, and only its own acceptance is answered its loan', () => {
  it('an acceptance that finds the offer taken by another, never recorded by the run, is refused TAKEN; the one that took it is paid out', async function () {
    this.timeout(60_000);
    const { db, deps } = harness();
    const client = deps.temporal;
    const borrower = await newBorrower();
    const offer = await offerFor(borrower.headers);
    assert.equal(offer.status, 201, offer.text);
    const ref = { organizationId: ORG, applicationId: offer.body.id as string };
    // The lost workflow task: the real step commits acceptance A in Postgres, the run never hears of it.
    const steps = createLoanActivities(deps);
    const terms = { loanAmount: 500_000, tenure: 2, collateralAmount: 50_000 };
    const a = await steps.acceptLoanOffer({ ...ref, ...terms, acceptedBy: 'acceptance-a-whose-task-was-lost' });
    assert.equal(a.outcome, 'accepted');
    const again = await steps.acceptLoanOffer({ ...ref, ...terms, acceptedBy: 'acceptance-a-whose-task-was-lost' });
    assert.deepEqual(again, a, 'the same acceptance retried is answered its loan');
    const other = await steps.acceptLoanOffer({ ...ref, ...terms, acceptedBy: 'acceptance-b' });
    assert.deepEqual(other, { outcome: 'not_open', status: 'ACCEPTED' }, 'another acceptance finds it taken');

    // B reaches the run (its request read the offer APPROVED before A committed): refused, and A finished.
    const handle = client.workflow.getHandle(workflowIds.loanApplication(ref.applicationId));
    await assert.rejects(
      handle.executeUpdate(acceptOfferUpdate, { args: [terms], updateId: 'acceptance-b' }),
      refusedTaken,
    );
    assert.equal(await handle.result(), 'ACCEPTED');
    const loanId = (a as { loanId: string }).loanId;
    const application = await db('loan_applications').where({ id: ref.applicationId }).first();
    assert.equal(application.status, 'DISBURSED');
    assert.equal(application.loan_id, loanId);
    assert.equal((await db('loans').where({ user_id: borrower.user.id })).length, 1, 'one loan');
    const loanRun = client.workflow.getHandle(workflowIds.loan(loanId));
    assert.equal((await loanRun.describe()).status.name, 'RUNNING', "the loan's own run started");
  });
});

import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { DEMO } from '../../db/seeds/demo';
import { createOffer } from '../../db/loans/applications';
import { findProduct, offerTerms } from '../../db/loans/products';
import { ledgerIsBalanced } from '../../db/ledger/ledger';
import { workflowIds } from '../../workflows/ids';
import { acceptOfferUpdate, type LoanOfferInput } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { newBorrower } from '../support/loans';
import { balanceOf, journalKinds, until } from '../support/money';
import { restoreSchedules, spawnWorker } from '../support/processes';

describe('durability: the worker process dies in the middle of taking a loan offer', () => {
  after(restoreSchedules);

  it('killed once the loan was made, before the update answered: a new worker finishes, the collateral is held once and the principal disbursed once', async function () {
    this.timeout(150_000);
    const { client, db } = harness();
    const signingKey = JSON.stringify(await generateServiceSigningKey());
    const taskQueue = `loan-crash-${randomBytes(4).toString('hex')}`;
    const borrower = await newBorrower({ funds: 100_000 });
    const organizationId = DEMO.organizations.demo.id;
    const product = (await findProduct(db, organizationId, 'standard'))!;
    const offer = await createOffer(db, organizationId, {
      id: randomUUID(),
      resource_id: `lapp_${randomBytes(12).toString('base64url')}`,
      user_id: borrower.user.id,
      product_id: product.id,
      product_code: product.code,
      account_id: borrower.credit,
      current_account_id: borrower.current,
      loan_amount: 1_000_000,
      tenure_duration: 4,
      tenure_unit: 'WEEKS',
      terms: offerTerms(product),
      currency: 'KES',
      expires_at: new Date(Date.now() + 3_600_000),
    });
    const input: LoanOfferInput = {
      organizationId,
      applicationId: offer.id,
      loanAmount: 1_000_000,
      terms: offer.terms,
      expiresAt: offer.expires_at.toISOString(),
      dayMs: 86_400_000,
    };
    const first = await spawnWorker(taskQueue, signingKey);
    const workers = [first];
    try {
      await first.running();
      const handle = await client.workflow.start('loanApplication', {
        taskQueue,
        workflowId: workflowIds.loanApplication(offer.id),
        args: [input],
      });
      const updateId = randomUUID();
      const taken = { loanAmount: 500_000, tenure: 2, collateralAmount: 50_000 };
      // The first attempt's answer is lost with the worker; the client tries again with the same update id.
      const firstTry = handle.executeUpdate(acceptOfferUpdate, { args: [taken], updateId }).catch(() => undefined);
      await until(
        'the loan made',
        async () => (await db('loans').where({ application_id: offer.id }).first()) !== undefined,
        30_000,
      );
      first.child.kill('SIGKILL');
      const [, signal] = await first.exited;
      assert.equal(signal, 'SIGKILL');

      const second = await spawnWorker(taskQueue, signingKey);
      workers.push(second);
      await second.running();
      const answer = await handle.executeUpdate(acceptOfferUpdate, { args: [taken], updateId });
      await firstTry;
      const loans = await db('loans').where({ application_id: offer.id });
      assert.equal(loans.length, 1, 'one loan');
      assert.equal(answer.loanId, loans[0].id);
      assert.equal(await handle.result(), 'ACCEPTED');
      assert.deepEqual(await journalKinds(answer.loanId), ['COLLATERAL_HOLD', 'DISBURSEMENT', 'INTEREST'], 'each once');
      // 1,000.00 in, 500.00 held, 5,000.00 disbursed.
      assert.deepEqual(await balanceOf(borrower.current), { balance: 600_000, held: 50_000, available: 550_000 });
      assert.equal((await db('loan_applications').where({ id: offer.id }).first()).status, 'DISBURSED');
      assert.ok(await ledgerIsBalanced(db));
      // The loan's own run lives on (abandoned by its parent): stop it with the test's worker.
      await client.workflow.getHandle(workflowIds.loan(answer.loanId)).terminate('test done');
      await second.stop();
    } finally {
      for (const worker of workers)
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });
});

import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { generateServiceSigningKey } from '../../api/auth/service-keys';
import { installmentDueDays } from '../../db/loans/loans';
import { penaltyTermsOf } from '../../db/loans/penalties';
import { DEMO } from '../../db/seeds/demo';
import { penaltyAmount } from '../../domain/loans/allocation';
import { workflowIds } from '../../workflows/ids';
import type { LoanInput } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { ledgerMismatches, newBorrower, repay, takeLoan, testProduct } from '../support/loans';
import { money, payerNumber, settled, stkPush, until } from '../support/money';
import { spawnWorker } from '../support/processes';

/** Test days are one second long (LOAN_DAY_LENGTH): a bullet loan due on day `tenure`. */
const bulletProduct = (penalty: { grace: number; period: number; maxDays: number; bps?: number }, tenure = 2) =>
  testProduct({
    tenure_unit: 'DAYS',
    tenures: [tenure],
    default_tenure: tenure,
    penalty_rate_bps: penalty.bps ?? 100,
    penalty_grace_period_days: penalty.grace,
    penalty_period_days: penalty.period,
    penalty_max_charge_days: penalty.maxDays,
  });
const chargesOf = (loanId: string) => harness().db('loan_penalty_charges').where({ loan_id: loanId }).orderBy('period');

describe('spec 2 penalty_terms: AFTER_LOAN_END + grace, RECURRING every period_days, on PRINCIPAL_AND_ARREARS, up to max_charge_days', () => {
  it('charges after the grace days, once per period, on what was outstanding then, and stops at the cap; payments pay penalties first', async function () {
    this.timeout(60_000);
    const product = await bulletProduct({ grace: 2, period: 1, maxDays: 3 });
    const borrower = await newBorrower();
    // KES 1,000 for 2 days at 250 bps a week: 7.14 interest.
    const { loanId } = await takeLoan(borrower, { product, amount: 100_000, tenure: 2, unit: 'DAYS' });
    // Paid before the loan ends: interest first, then principal; the basis shrinks to the rest.
    await repay(borrower, 50_000);
    const { db } = harness();
    const charges = await until(
      'three charges',
      async () => {
        const rows = await chargesOf(loanId);
        return rows.length >= 3 && rows;
      },
      20_000,
    );
    const loan = await db('loans').where({ id: loanId }).first();
    const anchor = Math.floor(loan.disbursed_at.getTime() / 1000) * 1000;
    // Due on day 2, then 2 grace days: charges on days 4, 5 and 6 (offsets 0, 1, 2 < 3 days).
    assert.deepEqual(
      charges.map((c) => (c.due_at.getTime() - anchor) / 1000),
      [4, 5, 6],
    );
    const basis = 100_000 + 714 - 50_000;
    for (const charge of charges) {
      assert.equal(Number(charge.basis), basis, 'principal and arrears outstanding at the charge');
      assert.equal(Number(charge.amount), penaltyAmount(basis, 100));
    }
    // No fourth charge after the cap.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.equal((await chargesOf(loanId)).length, 3);
    const reply = await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: borrower.headers });
    const [installment] = reply.body.data;
    assert.equal(installment.amount.penalties, 3 * penaltyAmount(basis, 100));
    assert.equal(installment.status, 'OVERDUE');
    assert.deepEqual(await ledgerMismatches(), []);

    const owed = installment.outstanding.total;
    const last = await repay(borrower, Math.ceil(owed / 100) * 100);
    const [record] = await db('installment_allocations').where({ event_id: last.id });
    assert.equal(Number(record.arrears_amount), 3 * penaltyAmount(basis, 100), 'penalties first');
    assert.equal(record.effect, 'OBLIGATION_SETTLED');
    await until('repaid', async () => (await db('loans').where({ id: loanId }).first()).status === 'REPAID', 15_000);
    assert.deepEqual(await ledgerMismatches(), []);
    await recordHistory(workflowIds.loan(loanId), 'loan-penalties-kept-timer');
  });

  it('a worker down for days catches up every missed period, each with the amount it would have had', async function () {
    this.timeout(150_000);
    const product = await bulletProduct({ grace: 1, period: 2, maxDays: 8 }, 1);
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { product, amount: 100_000, tenure: 1, unit: 'DAYS' });
    const { client, db } = harness();
    const organizationId = DEMO.organizations.demo.id;
    // The loan's run moves to a task queue no worker polls yet: its worker is down.
    const loan = await db('loans').where({ id: loanId }).first();
    await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('moved to a worker that is down');
    const taskQueue = `loan-penalties-${randomBytes(4).toString('hex')}`;
    const anchorMs = Math.floor(loan.disbursed_at.getTime() / 1000) * 1000;
    const input: LoanInput = {
      organizationId,
      loanId,
      anchorMs,
      dayMs: 1000,
      installments: await installmentDueDays(db, organizationId, loanId),
      penalty: (await penaltyTermsOf(db, organizationId, loanId))!,
    };
    await client.workflow.start('loan', { taskQueue, workflowId: workflowIds.loan(loanId), args: [input] });
    // Due on day 1; charges on days 2, 4, 6, 8. A repayment lands between the first two.
    await until('past the first charge', () => Date.now() > anchorMs + 2_100, 10_000);
    const pushed = await stkPush(borrower.headers, {
      account_id: borrower.credit,
      amount: money(30_000),
      mobile_number: payerNumber(0),
    });
    assert.equal(pushed.status, 201, pushed.text);
    assert.equal((await settled(borrower.headers, pushed.body.id)).status, 'POSTED');
    const posted = (await db('transactions').where({ id: pushed.body.id }).first()).posted_at.getTime();
    assert.ok(posted > anchorMs + 2_000 && posted < anchorMs + 4_000, 'posted between the first two charges');
    await until('every period passed', () => Date.now() > anchorMs + 8_500, 15_000);
    // Its allocation and every charge waited for the loan's worker.
    assert.equal((await chargesOf(loanId)).length, 0);
    assert.equal(await db('loan_transactions').where({ id: pushed.body.id }).first(), undefined);

    const worker = await spawnWorker(taskQueue, JSON.stringify(await generateServiceSigningKey()));
    try {
      await worker.running();
      const charges = await until(
        'four charges',
        async () => {
          const rows = await chargesOf(loanId);
          return rows.length === 4 && rows;
        },
        30_000,
      );
      assert.deepEqual(
        charges.map((c) => (c.due_at.getTime() - anchorMs) / 1000),
        [2, 4, 6, 8],
      );
      // Interest 3.57. The first charge on everything; the repayment paid it first, then the
      // interest, then principal; later charges on what was left.
      const full = 100_000 + 357;
      const first = penaltyAmount(full, 100);
      const after = full - (30_000 - first);
      assert.deepEqual(
        charges.map((c) => Number(c.basis)),
        [full, after, after, after],
      );
      assert.deepEqual(
        charges.map((c) => Number(c.amount)),
        [first, ...Array(3).fill(penaltyAmount(after, 100))],
      );
      const [record] = await db('installment_allocations').where({ event_id: pushed.body.id });
      assert.equal(Number(record.arrears_amount), first, 'the repayment paid the charge due before it');
      assert.deepEqual(await ledgerMismatches(), []);
      await recordHistory(workflowIds.loan(loanId), 'loan-penalties-caught-up', { running: true });
      await client.workflow.getHandle(workflowIds.loan(loanId)).terminate('test done');
      await worker.stop();
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
  });
});

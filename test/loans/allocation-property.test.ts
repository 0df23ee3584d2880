import { strict as assert } from 'node:assert';
import { ledgerAccounts, ledgerIsBalanced, postJournal } from '../../db/ledger/ledger';
import { applyRepayment } from '../../db/loans/servicing';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { ledgerMismatches, newBorrower, takeLoan, testProduct } from '../support/loans';
import { insertStkPushTransaction } from '../support/money';

/** mulberry32: a seeded generator, so a failing sequence can be replayed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('spec 2 allocations, property over Postgres: any payment sequence allocates exactly the payments, never more than is due', () => {
  it('random payments (seeded) over two revolving cycles and a schedule of several installments', async function () {
    this.timeout(120_000);
    const { db } = harness();
    const organizationId = DEMO.organizations.demo.id;
    const product = await testProduct({
      product_type: 'REVOLVING_CREDIT',
      credit_limit: 2_000_000,
      max_amount: 2_000_000,
      tenure_unit: 'WEEKS',
      tenures: [3, 4],
      default_tenure: 4,
      // Nothing falls due while the test runs: weeks are 7 s, and the test does not wait.
    });
    const borrower = await newBorrower({ funds: 1_000_000 });
    await takeLoan(borrower, { product, amount: 700_000, tenure: 4 });
    await takeLoan(borrower, { product, amount: 500_000, tenure: 3 });
    const installments = async () =>
      db('installments').where({ account_id: borrower.credit }).orderBy(['loan_id', 'position']);
    const owedTotal = (rows: Record<string, string>[]) =>
      rows.reduce(
        (sum, i) =>
          sum +
          Number(i.principal) +
          Number(i.interest) +
          Number(i.penalties) -
          Number(i.principal_paid) -
          Number(i.interest_paid) -
          Number(i.penalties_paid),
        0,
      );
    const next = random(20261124);
    let paidIn = 0;
    const start = owedTotal(await installments());
    for (let step = 0; step < 30; step++) {
      const before = await installments();
      const owed = owedTotal(before);
      // Small, large, exact and beyond: whole shillings as the provider moves them.
      const amount = 100 * (1 + Math.floor(next() * (next() < 0.2 ? owed / 50 : owed / 400)));
      const push = await insertStkPushTransaction(
        { current: borrower.credit, phone: borrower.phone, user: { organization_id: organizationId } },
        amount,
      );
      await db.transaction(async (trx) => {
        await trx('transactions').where({ id: push.id }).update({ status: 'POSTED', posted_at: new Date() });
        await postJournal(trx, {
          transactionId: push.id,
          kind: 'COLLECTION',
          currency: 'KES',
          legs: [
            { account: ledgerAccounts.collections, amount },
            { account: ledgerAccounts.customer(borrower.credit), amount: -amount },
          ],
        });
      });
      const applied = await applyRepayment(db, organizationId, { transactionId: push.id, loanId: null }, new Date());
      assert.equal(applied.outcome, 'applied');
      // Applied again (a retry): nothing changes.
      await applyRepayment(db, organizationId, { transactionId: push.id, loanId: null }, new Date());
      paidIn += amount;

      const event = await db('loan_transactions').where({ id: push.id }).first();
      const records = await db('installment_allocations').where({ event_id: push.id });
      const allocated = records.reduce((sum, r) => sum + Number(r.allocated_amount), 0);
      assert.equal(allocated, Number(event.allocated_amount), `step ${step}: records sum to the event`);
      assert.equal(allocated + Number(event.overpaid_amount), amount, `step ${step}: the whole payment, once`);
      assert.equal(allocated, Math.min(amount, owed), `step ${step}: never more than was due`);
      for (const r of records) {
        assert.equal(
          Number(r.allocated_amount),
          Number(r.principal_amount) + Number(r.interest_amount) + Number(r.arrears_amount),
        );
        const was = before.find((i) => i.id === r.installment_id)!;
        assert.ok(Number(r.principal_amount) <= Number(was.principal) - Number(was.principal_paid));
        assert.ok(Number(r.interest_amount) <= Number(was.interest) - Number(was.interest_paid));
      }
      const after = await installments();
      for (const i of after) {
        const settled =
          Number(i.principal_paid) === Number(i.principal) &&
          Number(i.interest_paid) === Number(i.interest) &&
          Number(i.penalties_paid) === Number(i.penalties);
        assert.equal(i.status === 'PAID', settled, `step ${step}: PAID exactly when nothing is owed`);
      }
      assert.equal(owedTotal(after), owed - allocated);
      assert.deepEqual(await ledgerMismatches(), [], `step ${step}: the ledger agrees with the schedule`);
      if (owedTotal(after) === 0) break;
    }
    const events = await db('loan_transactions').where({ account_id: borrower.credit });
    const allocatedTotal = events.reduce((sum, e) => sum + Number(e.allocated_amount), 0);
    assert.equal(allocatedTotal + events.reduce((sum, e) => sum + Number(e.overpaid_amount), 0), paidIn);
    assert.ok(allocatedTotal <= start);
    assert.ok(events.length >= 10, `${events.length} payments`);
    assert.ok(
      events.some((e) => Number(e.overpaid_amount) > 0 && Number(e.allocated_amount) > 0),
      'one payment paid off the rest and overpaid',
    );
    assert.ok(await ledgerIsBalanced(db));
  });
});

import { strict as assert } from 'node:assert';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { flatRateInterest } from '../../domain/loans/schedule';
import { applyPartnerB, ledgerMismatches, loanOf, newBorrower, offerFor, repay, testProduct } from '../support/loans';
import { until } from '../support/money';

/** A revolving product of the test's own, repaid over 30 days (30 s in tests: nothing falls due while it runs). */
let product = 'revolving';
const revolvingOffer = async (headers: Record<string, string>) => {
  const reply = await offerFor(headers, undefined, { product });
  assert.ok(reply.status === 201 || reply.status === 200, reply.text);
  return reply.body;
};
const draw = async (headers: Record<string, string>, amount: number) => {
  const offer = await revolvingOffer(headers);
  const reply = await applyPartnerB(headers, {
    application_id: offer.id,
    loan_amount: amount,
    tenure: { duration: 30, unit: 'DAYS' },
    collateral_amount: amount / 10,
  });
  return { offer, reply };
};

describe('spec 4.3: revolving credit, each draw a cycle with its own installments', () => {
  it('draws open cycles within the limit, repayments restore the available limit, a closed cycle stays listed', async function () {
    this.timeout(60_000);
    product = await testProduct({
      product_type: 'REVOLVING_CREDIT',
      credit_limit: 2_000_000,
      max_amount: 2_000_000,
      tenure_unit: 'DAYS',
      tenures: [30],
      default_tenure: 30,
    });
    const interest = flatRateInterest(
      800_000,
      { basisPoints: 250, periodValue: 7, periodUnit: 'DAYS' },
      { duration: 30, unit: 'DAYS' },
    );
    const borrower = await newBorrower({ funds: 1_000_000 });
    const { db } = harness();
    const first = await revolvingOffer(borrower.headers);
    assert.equal(first.loan_product_type, 'REVOLVING_CREDIT');
    assert.equal(first.credit_limit, 2_000_000);
    assert.equal(first.loan_amount, 2_000_000, 'all of the limit is available');

    const one = await draw(borrower.headers, 800_000);
    assert.equal(one.reply.status, 200, one.reply.text);
    assert.equal(one.reply.body.loan_product_type, 'REVOLVING_CREDIT');
    const cycleOne = await loanOf(one.offer.id);
    const two = await draw(borrower.headers, 1_000_000);
    assert.equal(two.reply.status, 200, two.reply.text);
    const cycleTwo = await loanOf(two.offer.id);
    assert.notEqual(cycleOne, cycleTwo);
    const lines = await db('loans').whereIn('id', [cycleOne, cycleTwo]).distinct('credit_line_id');
    assert.equal(lines.length, 1, 'both cycles on one line');

    assert.equal((await revolvingOffer(borrower.headers)).loan_amount, 200_000, 'the limit less what is drawn');
    const over = await draw(borrower.headers, 300_000);
    assert.equal(over.reply.status, 400, 'above the available credit');
    const term = await offerFor(borrower.headers);
    assert.equal(term.status, 400);
    assert.match(term.body.description, /^LOAN_RUNNING/, 'a term loan waits for the draws');

    // Both cycles fall due the same day: the older cycle is paid first, interest then principal.
    const paid = await repay(borrower, 400_000);
    const records = await db('installment_allocations').where({ event_id: paid.id });
    const principalPaid = 400_000 - interest;
    assert.deepEqual(
      records.map((r) => [r.loan_id, Number(r.interest_amount), Number(r.principal_amount)]),
      [[cycleOne, interest, principalPaid]],
    );
    assert.equal(
      (await revolvingOffer(borrower.headers)).loan_amount,
      2_000_000 - (800_000 - principalPaid) - 1_000_000,
      'the principal repaid is available again',
    );

    // The rest of cycle one (the shillings over go to cycle two): it closes; all but cycle two is available.
    await repay(borrower, Math.ceil((800_000 - principalPaid) / 100) * 100);
    await until(
      'cycle one repaid',
      async () => (await db('loans').where({ id: cycleOne }).first()).status === 'REPAID',
    );
    assert.equal((await db('loans').where({ id: cycleTwo }).first()).status, 'ACTIVE');
    assert.equal((await revolvingOffer(borrower.headers)).loan_amount, 1_000_000);

    // Historical cycles: cycle one's installment and its allocations are still listed.
    const schedule = await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: borrower.headers });
    const closed = schedule.body.data.filter((i: { loan_id: string }) => i.loan_id === cycleOne);
    assert.equal(closed.length, 1);
    assert.equal(closed[0].status, 'PAID');
    const history = await call('GET', `/v1/accounts/${borrower.credit}/installments/${closed[0].id}/transactions`, {
      headers: borrower.headers,
    });
    assert.equal(history.status, 200, history.text);
    assert.equal(history.body.data.length, 2);
    assert.ok(
      history.body.data.every((row: { allocation: { cycle_id: string } }) => row.allocation.cycle_id === cycleOne),
    );
    const list = await call('GET', `/v1/accounts/${borrower.credit}/installments/transactions`, {
      headers: borrower.headers,
    });
    const cycles = new Set(
      list.body.data.flatMap((row: { installments: { cycle_id: string }[] }) =>
        row.installments.map((a) => a.cycle_id),
      ),
    );
    assert.ok(cycles.has(cycleOne));
    assert.deepEqual(await ledgerMismatches(), []);
  });
});

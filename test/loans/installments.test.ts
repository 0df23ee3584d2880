import { strict as assert } from 'node:assert';
import { createApiKey } from '../../api/auth/api-keys';
import { DEMO } from '../../db/seeds/demo';
import { harness } from '../support/harness';
import { call } from '../support/http';
import { newBorrower, repay, repayAll, takeLoan } from '../support/loans';
import { bearer } from '../support/tokens';

type Components = { principal: number; interest: number; penalties: number; total: number };
type Installment = {
  loan_id: string;
  position: number;
  due_date: string;
  amount: Components;
  paid: Components;
  outstanding: Components;
  currency: string;
  status: string;
};

const scheduleOf = async (borrower: { headers: Record<string, string>; credit: string }) => {
  const reply = await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: borrower.headers });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.data as Installment[];
};

/** amount = paid + outstanding, per component, and each total is its components' sum. */
function assertAddsUp(installment: Installment) {
  for (const part of ['principal', 'interest', 'penalties'] as const)
    assert.equal(installment.amount[part], installment.paid[part] + installment.outstanding[part], part);
  for (const side of [installment.amount, installment.paid, installment.outstanding])
    assert.equal(side.total, side.principal + side.interest + side.penalties);
}

describe('spec 4.3: GET installments for an account (listInstallments)', () => {
  it('a loan’s schedule, in position order and due-date order, its principal the loan amount, each amount paid plus outstanding', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 3 });
    const schedule = await scheduleOf(borrower);
    assert.deepEqual(
      schedule.map((i) => i.position),
      [1, 2, 3],
    );
    assert.ok(schedule.every((i) => i.loan_id === loanId && i.currency === 'KES'));
    const dues = schedule.map((i) => i.due_date);
    assert.deepEqual([...dues].sort(), dues, 'due dates rise with position');
    assert.equal(
      schedule.reduce((sum, i) => sum + i.amount.principal, 0),
      200_000,
      'the principal is the loan amount',
    );
    for (const installment of schedule) {
      assertAddsUp(installment);
      assert.equal(installment.paid.total, 0);
      assert.equal(installment.status, 'UPCOMING');
    }
  });

  it('a repayment is paid oldest installment first; a loan repaid in full shows every installment PAID, nothing outstanding', async () => {
    const borrower = await newBorrower();
    await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const [due] = await scheduleOf(borrower);
    await repay(borrower, due!.amount.total - 100);
    const [first, second] = (await scheduleOf(borrower)) as [Installment, Installment];
    assert.equal(first.outstanding.total, 100, 'the first installment takes the repayment');
    assert.equal(first.status, 'UPCOMING', 'not PAID while anything is outstanding');
    assert.equal(second.paid.total, 0, 'the second is untouched');
    [first, second].forEach(assertAddsUp);
    await repayAll(borrower);
    for (const installment of await scheduleOf(borrower)) {
      assertAddsUp(installment);
      assert.equal(installment.status, 'PAID');
      assert.equal(installment.outstanding.total, 0);
    }
  });

  it("another organization's account, or another user's, is 404 for installments", async () => {
    const borrower = await newBorrower();
    const other = await newBorrower();
    assert.equal(
      (await call('GET', `/v1/accounts/${other.credit}/installments`, { headers: borrower.headers })).status,
      404,
    );
    const { key } = await createApiKey(harness().db, {
      organizationId: DEMO.organizations.second.id,
      permissions: ['accounts.read'],
    });
    assert.equal(
      (await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: bearer(key) })).status,
      404,
    );
    const own = await call('GET', `/v1/accounts/${borrower.credit}/installments`, { headers: borrower.headers });
    assert.equal(own.status, 200);
    assert.deepEqual(own.body, { data: [] });
  });
});

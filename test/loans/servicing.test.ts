import { strict as assert } from 'node:assert';
import { DEMO } from '../../db/seeds/demo';
import { workflowIds } from '../../workflows/ids';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { applicantHeaders } from '../support/kyc';
import { installmentsOf, ledgerMismatches, newBorrower, repaid, repay, takeLoan } from '../support/loans';
import { journalKinds, until } from '../support/money';

const operator = () => applicantHeaders(DEMO.users.internal);

describe('spec 2: allocations are immutable; reversals and waivers are new transaction events (operators, extension)', () => {
  it('a reversal writes offsetting records, the installments owe again; asked again it answers the same reversal', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const pushed = await repay(borrower, 120_000);
    const { db } = harness();
    const original = await db('installment_allocations').where({ event_id: pushed.id }).orderBy('position');
    const path = `/v1/accounts/${borrower.credit}/installments/transactions/${pushed.id}/reversal`;

    const byCustomer = await call('POST', path, { headers: borrower.headers, json: { reason: 'mine' } });
    assert.equal(byCustomer.status, 403, 'customers do not hold loans.service');
    const reply = await call('POST', path, {
      headers: await operator(),
      json: { reason: 'paid to the wrong account' },
    });
    assert.equal(reply.status, 201, reply.text);
    assert.equal(reply.body.transaction.details.type, 'REVERSAL');
    assert.equal(reply.body.transaction.details.reverses_id, pushed.id);
    assert.match(reply.body.transaction.resource_id, /^trx_/);
    assert.deepEqual(
      reply.body.installments.map(
        (a: { position: number; allocated_amount: number; effect: string; source: string }) => [
          a.position,
          a.allocated_amount,
          a.effect,
          a.source,
        ],
      ),
      original.map((r) => [r.position, -Number(r.allocated_amount), 'REVERSED', 'REVERSAL']),
    );
    // The original records are untouched, and the database refuses to change them.
    assert.deepEqual(await db('installment_allocations').where({ event_id: pushed.id }).orderBy('position'), original);
    await assert.rejects(
      db('installment_allocations').where({ event_id: pushed.id }).update({ allocated_amount: 0 }),
      /append-only/,
    );
    const schedule = await installmentsOf(borrower.headers, borrower.credit);
    assert.equal(
      schedule.reduce((sum, i) => sum + i.outstanding.total, 0),
      210_000,
      'everything owed again',
    );
    assert.ok(schedule.every((i) => i.status !== 'PAID'));

    const again = await call('POST', path, { headers: await operator(), json: { reason: 'twice' } });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.body.transaction.id, reply.body.transaction.id, 'one reversal per repayment');
    assert.deepEqual(await journalKinds(reply.body.transaction.id), ['REVERSAL']);
    assert.deepEqual(await ledgerMismatches(), []);

    const otherOrg = await call('POST', path, {
      headers: await applicantHeaders(DEMO.users.secondInternal),
      json: { reason: 'not ours' },
    });
    assert.equal(otherOrg.status, 404);
    await recordHistory(workflowIds.loan(loanId), 'loan-reversal', { running: true });
  });

  it('a repayment whose loan is repaid cannot be reversed: 400 LOAN_CLOSED', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const pushed = await repay(borrower, 210_000);
    await repaid(loanId);
    const reply = await call(
      'POST',
      `/v1/accounts/${borrower.credit}/installments/transactions/${pushed.id}/reversal`,
      { headers: await operator(), json: { reason: 'too late' } },
    );
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.body.description, /^LOAN_CLOSED/);
  });

  it('a waiver settles penalties then interest (never principal) with WAIVED records; more than is waivable is refused', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const path = `/v1/accounts/${borrower.credit}/installments/waivers`;
    const keyed = async (key: string) => ({ ...(await operator()), 'Idempotency-Key': `${key}-${loanId}` });
    const unkeyed = await call('POST', path, {
      headers: await operator(),
      json: { loan_id: loanId, amount: { value: 100, currency: 'KES' }, reason: 'goodwill' },
    });
    assert.equal(unkeyed.status, 400, 'a waiver needs an Idempotency-Key');
    assert.match(unkeyed.body.description, /header\.idempotency-key/);
    const tooMuch = await call('POST', path, {
      headers: await keyed('too-much'),
      json: { loan_id: loanId, amount: { value: 10_001, currency: 'KES' }, reason: 'goodwill' },
    });
    assert.equal(tooMuch.status, 400, tooMuch.text);
    assert.match(tooMuch.body.description, /^OVER_WAIVABLE/);
    const waiver = { loan_id: loanId, amount: { value: 7_000, currency: 'KES' }, reason: 'goodwill' };
    const reply = await call('POST', path, { headers: await keyed('waive'), json: waiver });
    assert.equal(reply.status, 201, reply.text);
    const retried = await call('POST', path, { headers: await keyed('waive'), json: waiver });
    assert.equal(retried.body.transaction.id, reply.body.transaction.id, 'a retried waiver is the same waiver');
    assert.equal(reply.body.transaction.details.type, 'WAIVER');
    assert.deepEqual(
      reply.body.installments.map(
        (a: { position: number; interest_amount: number; principal_amount: number; effect: string }) => [
          a.position,
          a.interest_amount,
          a.principal_amount,
          a.effect,
        ],
      ),
      [
        [1, 5_000, 0, 'WAIVED'],
        [2, 2_000, 0, 'WAIVED'],
      ],
    );
    assert.deepEqual(await journalKinds(reply.body.transaction.id), ['WAIVER']);
    assert.deepEqual(await ledgerMismatches(), []);
    // The rest repaid: 2,000.00 principal and 30.00 interest.
    await repay(borrower, 203_000);
    await repaid(loanId);
    const late = await call('POST', path, {
      headers: await keyed('late'),
      json: { loan_id: loanId, amount: { value: 100, currency: 'KES' }, reason: 'too late' },
    });
    assert.equal(late.status, 400);
    assert.match(late.body.description, /^LOAN_CLOSED/);
    // The same keyed waiver again after its stored answer was lost, the loan closed since: what it booked.
    assert.equal(
      await harness()
        .db('idempotency_keys')
        .where({ key: `waive-${loanId}` })
        .delete(),
      1,
    );
    const lost = await call('POST', path, { headers: await keyed('waive'), json: waiver });
    assert.equal(lost.status, 201, lost.text);
    assert.equal(lost.body.transaction.id, reply.body.transaction.id, 'the waiver it booked, not LOAN_CLOSED');
    assert.deepEqual(await journalKinds(reply.body.transaction.id), ['WAIVER'], 'booked once');
    assert.deepEqual(await ledgerMismatches(), []);
  });

  it('a payment reversed after its installment’s overdue day leaves the installment OVERDUE and the loan in arrears', async function () {
    this.timeout(30_000);
    const borrower = await newBorrower();
    // Two weekly installments of 1,050.00; the first is paid before its due day (7 s in tests).
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const pushed = await repay(borrower, 105_000);
    const { db } = harness();
    const first = () => db('installments').where({ loan_id: loanId, position: 1 }).first();
    assert.equal((await first()).status, 'PAID');
    await until('its overdue day passed', async () => (await first()).schedule_status === 'OVERDUE', 15_000);
    assert.equal((await first()).status, 'PAID', 'paid in time: not overdue');
    assert.equal((await db('loans').where({ id: loanId }).first()).arrears_at, null);
    const reversal = await call(
      'POST',
      `/v1/accounts/${borrower.credit}/installments/transactions/${pushed.id}/reversal`,
      {
        headers: await operator(),
        json: { reason: 'chargeback' },
      },
    );
    assert.equal(reversal.status, 201, reversal.text);
    assert.equal((await first()).status, 'OVERDUE');
    assert.ok((await db('loans').where({ id: loanId }).first()).arrears_at, 'the loan is in arrears');
    assert.deepEqual(await ledgerMismatches(), []);
  });

  it('allocations of a repayment on a reversed installment never exceed what is due', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 100_000, tenure: 1 });
    const pushed = await repay(borrower, 100_000);
    const reversal = await call(
      'POST',
      `/v1/accounts/${borrower.credit}/installments/transactions/${pushed.id}/reversal`,
      {
        headers: await operator(),
        json: { reason: 'chargeback' },
      },
    );
    assert.equal(reversal.status, 201, reversal.text);
    const again = await repay(borrower, 102_500);
    await repaid(loanId);
    const event = await harness().db('loan_transactions').where({ id: again.id }).first();
    assert.equal(Number(event.allocated_amount), 102_500, 'the whole loan, once');
    assert.equal(Number(event.overpaid_amount), 0);
    assert.deepEqual(await ledgerMismatches(), []);
  });
});

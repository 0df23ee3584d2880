import { strict as assert } from 'node:assert';
import { DEMO } from '../../db/seeds/demo';
import { ledgerAccounts, ledgerIsBalanced, postJournal } from '../../db/ledger/ledger';
import { scheduleIds, workflowIds } from '../../workflows/ids';
import { repaymentSignal } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import { call } from '../support/http';
import { applicantHeaders } from '../support/kyc';
import { allocated, ledgerMismatches, newBorrower, repay, takeLoan } from '../support/loans';
import {
  balanceOf,
  insertStkPushTransaction,
  journalKinds,
  money,
  payerNumber,
  resetSimulator,
  setSimulatorMode,
  stkPush,
  until,
} from '../support/money';

const installmentsOf = async (headers: Record<string, string>, account: string) => {
  const reply = await call('GET', `/v1/accounts/${account}/installments`, { headers });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.data as {
    id: string;
    position: number;
    status: string;
    outstanding: { principal: number; interest: number; penalties: number; total: number };
  }[];
};
const loanStatus = async (loanId: string) => (await harness().db('loans').where({ id: loanId }).first()).status;
const repaid = (loanId: string) =>
  until(`loan ${loanId} repaid`, async () => (await loanStatus(loanId)) === 'REPAID', 20_000);
const operator = () => applicantHeaders(DEMO.users.internal);

describe('spec 4.3/4.4: repayments by push prompt, allocated to installments (PENALTIES_INTEREST_PRINCIPAL_OLDEST_FIRST)', () => {
  after(resetSimulator);

  it('partial payments spread over several installments, oldest first, interest before principal; the exact payoff closes the loan', async () => {
    const borrower = await newBorrower();
    // KES 4,000 over 4 weeks at 250 bps a week: 4 installments of 1,000.00 principal + 100.00 interest.
    const { loanId } = await takeLoan(borrower, { amount: 400_000, tenure: 4 });
    const first = await repay(borrower, 150_000);
    const { db } = harness();
    const records = await db('installment_allocations').where({ event_id: first.id }).orderBy('position');
    assert.deepEqual(
      records.map((r) => [
        r.position,
        Number(r.interest_amount),
        Number(r.principal_amount),
        Number(r.arrears_amount),
        r.effect,
        r.source,
      ]),
      [
        [1, 10_000, 100_000, 0, 'OBLIGATION_SETTLED', 'LIVE'],
        [2, 10_000, 30_000, 0, 'PARTIALLY_SETTLED', 'LIVE'],
      ],
    );
    const schedule = await installmentsOf(borrower.headers, borrower.credit);
    assert.equal(schedule[0]!.status, 'PAID');
    assert.deepEqual(schedule[1]!.outstanding, { principal: 70_000, interest: 0, penalties: 0, total: 70_000 });
    assert.equal(await loanStatus(loanId), 'ACTIVE');

    // What is left, to the cent: 700.00 + 1,100.00 + 1,100.00.
    const second = await repay(borrower, 290_000);
    await repaid(loanId);
    const after = await installmentsOf(borrower.headers, borrower.credit);
    assert.ok(after.every((i) => i.status === 'PAID' && i.outstanding.total === 0));
    const event = await db('loan_transactions').where({ id: second.id }).first();
    assert.equal(Number(event.allocated_amount), 290_000);
    assert.equal(Number(event.overpaid_amount), 0);
    assert.deepEqual(await journalKinds(second.id), ['COLLECTION', 'REPAYMENT']);
    assert.equal((await balanceOf(borrower.current)).held, 0, 'the collateral is released');
    assert.equal((await balanceOf(borrower.credit)).balance, 0, 'the credit account passes the money on');
    assert.deepEqual(await ledgerMismatches(), []);
    assert.ok(await ledgerIsBalanced(db));
    await recordHistory(workflowIds.loan(loanId), 'loan-repaid-by-repayments');
    await recordHistory(workflowIds.stkPush(second.id), 'stkPush-repayment');
  });

  it('an overpayment (two pushes racing, each within what is owed) stays on the credit account, never lost, never in the current account', async () => {
    const borrower = await newBorrower({ funds: 100_000 });
    // KES 1,000 for 1 week: 1,025.00 owed.
    const { loanId } = await takeLoan(borrower, { amount: 100_000, tenure: 1 });
    const before = await balanceOf(borrower.current);
    const [first, second] = await Promise.all([repay(borrower, 60_000), repay(borrower, 60_000)]);
    await repaid(loanId);
    const events = await harness().db('loan_transactions').whereIn('id', [first.id, second.id]);
    assert.equal(
      events.reduce((sum, e) => sum + Number(e.allocated_amount), 0),
      102_500,
    );
    assert.equal(
      events.reduce((sum, e) => sum + Number(e.overpaid_amount), 0),
      17_500,
    );
    assert.deepEqual(await balanceOf(borrower.credit), { balance: 17_500, held: 0, available: 17_500 });
    // Only the 100.00 collateral came back to the current account.
    assert.equal((await balanceOf(borrower.current)).available - before.available, 10_000);
    assert.deepEqual(await ledgerMismatches(), []);
  });

  it('a push on a credit account that owes nothing, or above what it owes, is 400 (NOTHING_OWED, OVER_OUTSTANDING)', async () => {
    const borrower = await newBorrower({ funds: 100_000 });
    const push = (amount: number) =>
      stkPush(borrower.headers, { account_id: borrower.credit, amount: money(amount), mobile_number: payerNumber(0) });
    const nothing = await push(5_000);
    assert.equal(nothing.status, 400, nothing.text);
    assert.match(nothing.body.description, /NOTHING_OWED/);
    await takeLoan(borrower, { amount: 100_000, tenure: 1 });
    // 1,025.00 owed: 1,025.00 is the most, and 1,026.00 too much.
    const over = await push(102_600);
    assert.equal(over.status, 400, over.text);
    assert.match(over.body.description, /OVER_OUTSTANDING: at most 102500/);
    const exact = await push(102_500);
    assert.equal(exact.status, 201, exact.text);
  });

  it('a repayment callback delivered twice, and the repayment signalled again, is allocated once', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    await setSimulatorMode({ callbacks: 'duplicate' });
    const pushed = await repay(borrower, 60_000);
    await resetSimulator();
    const handle = harness().client.workflow.getHandle(workflowIds.loan(loanId));
    await handle.signal(repaymentSignal, { transactionId: pushed.id });
    await handle.signal(repaymentSignal, { transactionId: pushed.id });
    const { db } = harness();
    // The run handles signals in order: a later repayment allocated means the duplicates were seen.
    await repay(borrower, 10_000);
    assert.equal((await db('loan_transactions').where({ transaction_id: pushed.id })).length, 1);
    const records = await db('installment_allocations').where({ event_id: pushed.id });
    assert.equal(
      records.reduce((sum, r) => sum + Number(r.allocated_amount), 0),
      60_000,
    );
    assert.deepEqual(await journalKinds(pushed.id), ['COLLECTION', 'REPAYMENT']);
    const [first] = await installmentsOf(borrower.headers, borrower.credit);
    // 1,000.00 + 50.00 interest on the first installment: 700.00 paid in all.
    assert.equal(first!.outstanding.total, 105_000 - 70_000);
    assert.deepEqual(await ledgerMismatches(), []);
  });
});

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

describe('spec 4.3: the repayment reaches the loan run whatever order things happen in', () => {
  it('a repayment signalled for a push that is not a posted credit-account push allocates nothing', async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 100_000, tenure: 1 });
    const handle = harness().client.workflow.getHandle(workflowIds.loan(loanId));
    const stranger = '00000000-0000-4000-8000-00000000beef';
    await handle.signal(repaymentSignal, { transactionId: stranger });
    const pushed = await repay(borrower, 1_000);
    await allocated(pushed.id);
    assert.equal(await harness().db('loan_transactions').where({ id: stranger }).first(), undefined);
  });
});

describe('spec 4.3: nothing posted is left unallocated (the repayment-reconciliation schedule)', () => {
  it('a credit-account push posted and never handed to a loan run is allocated by the schedule, and the loan it repays closes', async function () {
    this.timeout(60_000);
    const { db, client, config } = harness();
    const organizationId = DEMO.organizations.demo.id;
    const borrower = await newBorrower({ funds: 100_000 });
    // KES 1,000 for a week: 1,025.00, paid by a push whose run never handed it over (as runs
    // started before repayments existed): posted an hour ago, its money on the credit account.
    const { loanId } = await takeLoan(borrower, { amount: 100_000, tenure: 1 });
    const push = await insertStkPushTransaction(
      { current: borrower.credit, phone: borrower.phone, user: { organization_id: organizationId } },
      102_500,
    );
    await db.transaction(async (trx) => {
      await trx('transactions')
        .where({ id: push.id })
        .update({ status: 'POSTED', posted_at: new Date(Date.now() - 3_600_000) });
      await postJournal(trx, {
        transactionId: push.id,
        kind: 'COLLECTION',
        currency: 'KES',
        legs: [
          { account: ledgerAccounts.collections, amount: 102_500 },
          { account: ledgerAccounts.customer(borrower.credit), amount: -102_500 },
        ],
      });
    });
    const schedule = client.schedule.getHandle(scheduleIds.repaymentReconciliation);
    const description = await schedule.describe();
    assert.equal((description.action as { workflowType: string }).workflowType, 'repaymentReconciliation');
    assert.deepEqual(
      description.spec.intervals?.map((i) => i.every),
      [config.REPAYMENT_RECONCILIATION_INTERVAL],
    );
    await schedule.trigger();
    await allocated(push.id, 30_000);
    await repaid(loanId);
    const run = await until('the run recorded', async () => (await schedule.describe()).info.recentActions.at(-1));
    await recordHistory(run.action.workflow.workflowId, 'repaymentReconciliation');
    assert.deepEqual(await journalKinds(push.id), ['COLLECTION', 'REPAYMENT']);
    assert.deepEqual(await balanceOf(borrower.credit), { balance: 0, held: 0, available: 0 });
    assert.deepEqual(await ledgerMismatches(), []);
  });
});

import { strict as assert } from 'node:assert';
import { DEMO } from '../../db/seeds/demo';
import { ledgerAccounts, ledgerIsBalanced, postJournal } from '../../db/ledger/ledger';
import { scheduleIds, workflowIds } from '../../workflows/ids';
import { repaymentSignal } from '../../workflows/loans/messages';
import { harness } from '../support/harness';
import { recordHistory } from '../support/histories';
import {
  allocated,
  installmentsOf,
  ledgerMismatches,
  loanStatus,
  newBorrower,
  repaid,
  repay,
  signalsTaken,
  takeLoan,
} from '../support/loans';
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
    await recordHistory(workflowIds.loan(loanId), 'loan-repaid-by-repayments-kept-timer');
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
    await signalsTaken(handle, 'repayment', 2);
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

describe('spec 4.3: the repayment reaches the loan run whatever order things happen in', () => {
  it("a repayment posted while the loan's run is on time is allocated with its push; the run only hears that the loan is repaid", async () => {
    const borrower = await newBorrower();
    const { loanId } = await takeLoan(borrower, { amount: 200_000, tenure: 2 });
    const { db, client } = harness();
    const partial = await repay(borrower, 60_000);
    // Allocated by the push's own run, before it answered POSTED and completed.
    const pushRun = await client.workflow.getHandle(workflowIds.stkPush(partial.id)).describe();
    assert.equal(pushRun.status.name, 'COMPLETED');
    const event = await db('loan_transactions').where({ transaction_id: partial.id }).first();
    assert.ok(event.created_at.getTime() <= pushRun.closeTime!.getTime());
    assert.equal(event.loan_id, null, 'not allocated by the loan’s run');
    const rest = await repay(borrower, 210_000 - 60_000);
    await repaid(loanId);
    const signals = ((await client.workflow.getHandle(workflowIds.loan(loanId)).fetchHistory()).events ?? [])
      .map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)
      .filter((name) => name !== undefined);
    assert.deepEqual(signals, ['paymentApplied'], 'told once, by the repayment that settled the loan');
    assert.deepEqual(await journalKinds(rest.id), ['COLLECTION', 'REPAYMENT']);
    assert.deepEqual(await ledgerMismatches(), []);
  });

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

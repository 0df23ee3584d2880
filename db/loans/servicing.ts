import type { Knex } from 'knex';
import { allocate } from '../../domain/loans/allocation';
import { repaymentEffect, reversalOf } from '../../domain/loans/servicing';
import { runBehind } from '../../domain/loans/steps';
import { LoanStatus } from '../../domain/loans/terms';
import type { TransactionFields } from '../../domain/mobile-money/views';
import { lockAccount } from '../accounts/accounts';
import { ledgerAccounts, postJournal } from '../ledger/ledger';
import { accountLoanSteps } from './loans';
import { openObligations, outcomeOf, receivableLegs, record, type ServicingOutcome } from './servicing-records';

/**
 * Servicing a lending account (migration 20261124100000_loan_servicing): repayments allocated
 * to installments, reversals, waivers (here) and penalty charges (penalties.ts); the records the
 * steps share are servicing-records.ts, their decisions domain/loans/servicing.ts. Each is one
 * database transaction under the account's lock (one servicing step per account at a time),
 * writes its event and allocation records once (unique keys: a repayment per push, a reversal
 * per repayment, a charge per loan and period) and one balanced journal entry; run twice, it
 * answers what the first run did and moves nothing again.
 */

export type { ServicingOutcome };

/**
 * Applies a POSTED push on a credit account to what the account owes, by the allocation
 * strategy: one event (its id the push's), its allocation records, the installments paid, one
 * REPAYMENT entry (the credit account pays the loans' receivables). An overpayment (the push
 * route refuses more than is owed, so only pushes racing each other make one) stays on the credit
 * account as the payer's money, recorded on the event for an operator to refund; it never reaches
 * the current account, whose deposits must come from the owner's number.
 *
 * `inTimeOnly`: allocated only if every ACTIVE loan on the account has taken each step due by the
 * push's posting (its DUE and OVERDUE marks, its penalty charges), so nothing is paid out of time
 * order; otherwise nothing is written and the answer is `behind`, naming the loan whose run should
 * take it (after those steps) and the posting instant it is to be ordered by.
 */
export async function applyRepayment(
  db: Knex,
  organizationId: string,
  input: { transactionId: string; loanId: string | null; inTimeOnly?: boolean },
  now: Date,
): Promise<ServicingOutcome | { outcome: 'behind'; loanId: string; postedAtMs: number }> {
  return db.transaction(async (trx) => {
    const push: (TransactionFields & { account_id: string }) | undefined = await trx('transactions as t')
      .join('accounts as a', 'a.id', 't.account_id')
      .where({
        't.organization_id': organizationId,
        't.id': input.transactionId,
        'a.type': 'CREDIT',
        't.type': 'STK_PUSH',
      })
      // The account's lock with the read: one servicing step per account at a time.
      .forUpdate('a')
      // The push's fields the Transaction resource shows (never the whole row: it holds the callback token).
      .first(
        't.id',
        't.resource_id',
        't.account_id',
        't.status',
        't.mobilemoney_transaction_id',
        't.amount',
        't.fee_amount',
        't.currency',
        't.failure_reason',
        't.transacted_at',
        't.confirmed_at',
        't.posted_at',
        't.failed_at',
        't.details',
      );
    if (!push || push.status !== 'POSTED')
      return { outcome: 'refused', reason: 'NOT_A_REPAYMENT', detail: 'not a posted push on a credit account' };
    const done = await trx('loan_transactions').where({ transaction_id: push.id }).first('id');
    if (done) return outcomeOf(trx, push.id);
    const postedAtMs = (push.posted_at ?? now).getTime();
    const behind =
      input.inTimeOnly && runBehind(await accountLoanSteps(trx, organizationId, push.account_id), postedAtMs);
    if (behind) return { outcome: 'behind', loanId: behind, postedAtMs };

    const amount = Number(push.amount);
    const obligations = await openObligations(trx, organizationId, push.account_id);
    const result = allocate(amount, obligations);
    await record(
      trx,
      organizationId,
      {
        id: push.id,
        resource_id: push.resource_id,
        account_id: push.account_id,
        kind: 'REPAYMENT',
        transaction_id: push.id,
        loan_id: input.loanId,
        amount,
        allocated_amount: result.allocated,
        overpaid_amount: result.overpayment,
        currency: push.currency,
        effective_at: push.posted_at ?? now,
      },
      push,
      result.allocations,
      'LIVE',
      now,
    );
    if (result.allocated > 0)
      await postJournal(trx, {
        transactionId: push.id,
        kind: 'REPAYMENT',
        currency: push.currency,
        legs: [
          { account: ledgerAccounts.customer(push.account_id), amount: result.allocated },
          ...receivableLegs(result.allocations, -1),
        ],
      });
    // A loan is repaid when every installment it had open is settled now.
    const { loanIds, repaid } = repaymentEffect(obligations, result.allocations);
    return { outcome: 'applied', eventId: push.id, loanIds, repaid };
  });
}

/**
 * Reverses a repayment's allocations (an operator's correction: the payment was misapplied or
 * returned to the payer): a REVERSAL event whose records offset the original ones, the
 * installments owing again, and a REVERSAL entry that restores the receivables against the
 * money owed back to the payer. Refused when a loan it paid is no longer ACTIVE.
 */
export async function reverseRepayment(
  db: Knex,
  organizationId: string,
  input: { reversalId: string; resourceId: string; repaymentId: string; reason: string; by: string },
  now: Date,
): Promise<ServicingOutcome> {
  return db.transaction(async (trx) => {
    const repayment: { id: string; account_id: string; currency: string; kind: string } | undefined = await trx(
      'loan_transactions',
    )
      .where({ organization_id: organizationId, id: input.repaymentId })
      .first('id', 'account_id', 'currency', 'kind');
    if (!repayment || repayment.kind !== 'REPAYMENT')
      return { outcome: 'refused', reason: 'NOT_FOUND', detail: 'No such repayment' };
    await lockAccount(trx, repayment.account_id);
    const earlier: { id: string } | undefined = await trx('loan_transactions')
      .where({ reverses_id: repayment.id })
      .first('id');
    if (earlier) return outcomeOf(trx, earlier.id);
    const original: {
      installment_id: string;
      loan_id: string;
      position: number;
      principal_amount: string;
      interest_amount: string;
      arrears_amount: string;
    }[] = await trx('installment_allocations').where({ event_id: repayment.id });
    if (original.length === 0)
      return { outcome: 'refused', reason: 'NOTHING_ALLOCATED', detail: 'The repayment paid no installment' };
    const loanIds = [...new Set(original.map((a) => a.loan_id))];
    const closed = await trx('loans').whereIn('id', loanIds).whereNot({ status: LoanStatus.ACTIVE }).first('id');
    if (closed) return { outcome: 'refused', reason: 'LOAN_CLOSED', detail: 'A loan the repayment paid is closed' };
    const { offsets, total } = reversalOf(
      original.map((a) => ({
        installmentId: a.installment_id,
        loanId: a.loan_id,
        position: a.position,
        principal: Number(a.principal_amount),
        interest: Number(a.interest_amount),
        arrears: Number(a.arrears_amount),
      })),
    );
    await record(
      trx,
      organizationId,
      {
        id: input.reversalId,
        resource_id: input.resourceId,
        account_id: repayment.account_id,
        kind: 'REVERSAL',
        reverses_id: repayment.id,
        amount: total,
        allocated_amount: total,
        currency: repayment.currency,
        reason: input.reason,
        created_by: input.by,
        effective_at: now,
      },
      null,
      offsets,
      'REVERSAL',
      now,
    );
    await postJournal(trx, {
      transactionId: input.reversalId,
      kind: 'REVERSAL',
      currency: repayment.currency,
      legs: [...receivableLegs(offsets, -1), { account: ledgerAccounts.reversalsPayable, amount: -total }],
    });
    // An installment owing again after its due date puts the loan in arrears.
    await trx('loans')
      .whereIn('id', loanIds)
      .whereNull('arrears_at')
      .whereExists((q) =>
        q.select(1).from('installments as i').whereRaw('i.loan_id = loans.id').where('i.status', 'OVERDUE'),
      )
      .update({ arrears_at: now });
    return outcomeOf(trx, input.reversalId);
  });
}

/**
 * Forgives `amount` of a loan's penalties and interest by the allocation strategy (never its
 * principal: that would be a write-off): a WAIVER event with WAIVED records and a WAIVER entry
 * charging the forgiven receivables to the waivers expense. Refused above what is waivable.
 */
export async function waive(
  db: Knex,
  organizationId: string,
  input: { waiverId: string; resourceId: string; loanId: string; amount: number; reason: string; by: string },
  now: Date,
): Promise<ServicingOutcome> {
  return db.transaction(async (trx) => {
    const loan: { id: string; account_id: string; currency: string; status: string } | undefined = await trx('loans')
      .where({ organization_id: organizationId, id: input.loanId })
      .first('id', 'account_id', 'currency', 'status');
    if (!loan) return { outcome: 'refused', reason: 'NOT_FOUND', detail: 'No such loan' };
    await lockAccount(trx, loan.account_id);
    const earlier = await trx('loan_transactions')
      .where({ organization_id: organizationId, id: input.waiverId })
      .first('id');
    if (earlier) return outcomeOf(trx, input.waiverId);
    if (loan.status !== LoanStatus.ACTIVE)
      return { outcome: 'refused', reason: 'LOAN_CLOSED', detail: 'The loan is closed' };
    const obligations = await openObligations(trx, organizationId, loan.account_id, loan.id);
    const result = allocate(input.amount, obligations, ['penalties', 'interest']);
    if (result.overpayment > 0)
      return {
        outcome: 'refused',
        reason: 'OVER_WAIVABLE',
        detail: `At most ${result.allocated} of penalties and interest is outstanding on the loan`,
      };
    await record(
      trx,
      organizationId,
      {
        id: input.waiverId,
        resource_id: input.resourceId,
        account_id: loan.account_id,
        kind: 'WAIVER',
        loan_id: loan.id,
        amount: input.amount,
        allocated_amount: input.amount,
        currency: loan.currency,
        reason: input.reason,
        created_by: input.by,
        effective_at: now,
      },
      null,
      result.allocations,
      'WAIVER',
      now,
    );
    await postJournal(trx, {
      transactionId: input.waiverId,
      kind: 'WAIVER',
      currency: loan.currency,
      legs: [
        { account: ledgerAccounts.waiversExpense, amount: input.amount },
        ...receivableLegs(result.allocations, -1),
      ],
    });
    return outcomeOf(trx, input.waiverId);
  });
}

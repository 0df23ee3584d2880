import type { Knex } from 'knex';
import type { PenaltyTerms } from '../../domain/loans/allocation';
import { penaltyCharge } from '../../domain/loans/servicing';
import { LoanStatus } from '../../domain/loans/terms';
import { lockAccount } from '../accounts/accounts';
import { ledgerAccounts, postJournal } from '../ledger/ledger';

/**
 * Penalty charges on a loan past its end (migration 20261124100000_loan_servicing): a servicing
 * step like those of servicing.ts, under the account's lock and once per loan and period, but
 * writing a charge on the last installment instead of an event with allocations.
 */

/** A loan's penalty terms, as its offer copied them from the product. */
export async function penaltyTermsOf(
  db: Knex | Knex.Transaction,
  organizationId: string,
  loanId: string,
): Promise<PenaltyTerms | undefined> {
  const row: { terms: { penalty: PenaltyTerms } } | undefined = await db('loans as l')
    .join('loan_applications as a', 'a.id', 'l.application_id')
    .where({ 'l.organization_id': organizationId, 'l.id': loanId })
    .first('a.terms');
  return row?.terms.penalty;
}

/**
 * Charges a loan's penalty for one period, once (unique per loan and period): rate_basis_points
 * of what was outstanding at `dueAt` (principal plus arrears: the principal and interest not
 * paid by then; penalties do not compound), added to the last installment and posted as a
 * PENALTY entry. Nothing for a loan no longer ACTIVE. Answers the amount charged.
 */
export async function chargePenalty(
  db: Knex,
  organizationId: string,
  input: { chargeId: string; loanId: string; period: number; dueAt: Date },
  now: Date,
): Promise<{ charged: number } | { closed: true }> {
  return db.transaction(async (trx) => {
    const loan: { id: string; account_id: string; currency: string; status: string } | undefined = await trx('loans')
      .where({ organization_id: organizationId, id: input.loanId })
      .first('id', 'account_id', 'currency', 'status');
    if (!loan) throw new Error(`no loan ${input.loanId}`);
    await lockAccount(trx, loan.account_id);
    const earlier: { amount: string } | undefined = await trx('loan_penalty_charges')
      .where({ loan_id: loan.id, period: input.period })
      .first('amount');
    if (earlier) return { charged: Number(earlier.amount) };
    if (loan.status !== LoanStatus.ACTIVE) return { closed: true };
    const terms = await penaltyTermsOf(trx, organizationId, loan.id);
    const { rows } = await trx.raw<{ rows: { basis: string; last: string }[] }>(
      `select (select sum(i.principal + i.interest) from installments i where i.loan_id = :loan)
              - coalesce((select sum(a.principal_amount + a.interest_amount) from installment_allocations a
                           where a.loan_id = :loan and a.effective_at < :at), 0) as basis,
              (select i.id from installments i where i.loan_id = :loan order by i.position desc limit 1) as last`,
      { loan: loan.id, at: input.dueAt },
    );
    const { basis, rateBasisPoints, amount } = penaltyCharge(Number(rows[0]!.basis), terms);
    await trx('loan_penalty_charges').insert({
      id: input.chargeId,
      organization_id: organizationId,
      loan_id: loan.id,
      installment_id: rows[0]!.last,
      period: input.period,
      due_at: input.dueAt,
      basis,
      rate_basis_points: rateBasisPoints,
      amount,
      charged_at: now,
    });
    if (amount > 0) {
      await trx('installments')
        .where({ id: rows[0]!.last })
        .update({ penalties: trx.raw('penalties + ?', [amount]), status: trx.raw('schedule_status'), updated_at: now });
      await postJournal(trx, {
        transactionId: input.chargeId,
        kind: 'PENALTY',
        currency: loan.currency,
        legs: [
          { account: ledgerAccounts.penaltyReceivable(loan.id), amount },
          { account: ledgerAccounts.penaltyIncome, amount: -amount },
        ],
      });
    }
    return { charged: amount };
  });
}

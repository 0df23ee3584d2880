import type { Knex } from 'knex';
import { LoanStatus } from '../../domain/loans/terms';

/**
 * Reads around servicing, outside its steps' transactions: what an account owes, which loan's
 * workflow takes a push, the pushes never allocated (the reconciliation's work), and the loans
 * whose ledger and schedule disagree.
 */

/** What a lending account's ACTIVE loans still owe in all (principal, interest, penalties). */
export async function accountOutstanding(db: Knex, organizationId: string, accountId: string): Promise<number> {
  const row: { owed: string | null } | undefined = await db('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .where({ 'i.organization_id': organizationId, 'i.account_id': accountId, 'l.status': LoanStatus.ACTIVE })
    .first(
      db.raw(
        'sum(i.principal + i.interest + i.penalties - i.principal_paid - i.interest_paid - i.penalties_paid) as owed',
      ),
    );
  return Number(row?.owed ?? 0);
}

/** The ACTIVE loan whose workflow takes a repayment on this account: the oldest open cycle. */
export async function repaymentTarget(db: Knex, organizationId: string, transactionId: string): Promise<string | null> {
  const row: { id: string } | undefined = await db('transactions as t')
    .join('loans as l', 'l.account_id', 't.account_id')
    .where({ 't.organization_id': organizationId, 't.id': transactionId, 'l.status': LoanStatus.ACTIVE })
    .orderBy([{ column: 'l.created_at' }, { column: 'l.id' }])
    .first('l.id');
  return row?.id ?? null;
}

/**
 * Pushes posted on a credit account between `from` and `to` that were never allocated, oldest
 * first: the repayment reconciliation's work (a platform job across organizations, like the
 * callback purge; each push carries its organization).
 */
export async function unallocatedRepayments(
  db: Knex,
  window: { from: Date; to: Date },
  limit: number,
): Promise<{ organizationId: string; transactionId: string }[]> {
  const rows: { organization_id: string; id: string }[] = await db('transactions as t')
    .join('accounts as a', 'a.id', 't.account_id')
    .where({ 't.type': 'STK_PUSH', 't.status': 'POSTED', 'a.type': 'CREDIT' })
    .where('t.posted_at', '>=', window.from)
    .where('t.posted_at', '<', window.to)
    .whereNotExists((q) => q.select(1).from('loan_transactions as e').whereRaw('e.transaction_id = t.id'))
    .orderBy('t.posted_at')
    .limit(limit)
    .select('t.organization_id', 't.id');
  return rows.map((r) => ({ organizationId: r.organization_id, transactionId: r.id }));
}

/** Whether every disbursed loan's ledger balance equals its schedule's outstanding total (the view's check). */
export async function inconsistentLoans(
  db: Knex,
): Promise<{ loan_id: string; ledger_outstanding: string; schedule_outstanding: string }[]> {
  return db('loan_ledger_consistency')
    .whereRaw('ledger_outstanding <> schedule_outstanding')
    .select('loan_id', 'ledger_outstanding', 'schedule_outstanding');
}

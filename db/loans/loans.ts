import type { Knex } from 'knex';
import { type LoanSteps, loanAnchorMs } from '../../domain/loans/steps';
import { InstallmentStatus, LoanApplicationStatus, LoanStatus } from '../../domain/loans/terms';
import { lockAccount } from '../accounts/accounts';
import { ledgerAccounts, postJournal } from '../ledger/ledger';

/**
 * Loans and their installments (migration 20261123100000_loans); taking an offer, which makes
 * them, is acceptance.ts. Every money step is one database transaction and one journal entry
 * unique per (loan id, kind), so a step run twice (an activity retried after a crash) moves the
 * money once.
 */
export interface LoanRow {
  id: string;
  organization_id: string;
  user_id: string;
  application_id: string;
  account_id: string;
  current_account_id: string;
  status: LoanStatus;
  principal: string;
  interest: string;
  collateral_amount: string;
  collateral_hold_id: string | null;
  currency: string;
  tenure_duration: number;
  tenure_unit: string;
  start_date: string;
  disbursed_at: Date | null;
  arrears_at: Date | null;
  closed_at: Date | null;
  /** A revolving-credit draw's line (null for a term loan). */
  credit_line_id: string | null;
}

export interface InstallmentRow {
  id: string;
  loan_id: string;
  account_id: string;
  position: number;
  due_date: string;
  principal: string;
  interest: string;
  penalties: string;
  principal_paid: string;
  interest_paid: string;
  penalties_paid: string;
  status: InstallmentStatus;
}

/**
 * Pays the principal out to the borrower's current account through the ledger (our loan
 * receivable against the customer's money), once: the entry is unique per loan.
 */
export async function disburseLoan(db: Knex, organizationId: string, loanId: string, now: Date): Promise<LoanRow> {
  return db.transaction(async (trx) => {
    const loan = await lockLoan(trx, organizationId, loanId);
    if (!loan) throw new Error(`no loan ${loanId}`);
    if (loan.status !== LoanStatus.PENDING_DISBURSEMENT) return loan;
    // The schedule runs from the disbursement date: paid out on a later day than accepted (a
    // retry across midnight), every due date moves by as many days.
    const today = now.toISOString().slice(0, 10);
    await trx.raw(
      `update installments i set due_date = i.due_date + (?::date - l.start_date)
         from loans l
        where l.id = i.loan_id and l.organization_id = ? and l.id = ? and l.start_date <> ?::date`,
      [today, organizationId, loan.id, today],
    );
    await trx('loans').where({ organization_id: organizationId, id: loan.id }).update({ start_date: today });
    const principal = Number(loan.principal);
    await postJournal(trx, {
      transactionId: loan.id,
      kind: 'DISBURSEMENT',
      currency: loan.currency,
      legs: [
        { account: ledgerAccounts.loanReceivable(loan.id), amount: principal },
        { account: ledgerAccounts.customer(loan.current_account_id), amount: -principal },
      ],
    });
    // Flat interest is owed in full from the disbursement: recognised with it.
    const interest = Number(loan.interest);
    if (interest > 0)
      await postJournal(trx, {
        transactionId: loan.id,
        kind: 'INTEREST',
        currency: loan.currency,
        legs: [
          { account: ledgerAccounts.interestReceivable(loan.id), amount: interest },
          { account: ledgerAccounts.interestIncome, amount: -interest },
        ],
      });
    await trx('loan_applications')
      .where({ organization_id: organizationId, id: loan.application_id })
      .update({ status: LoanApplicationStatus.DISBURSED, disbursed_at: now, updated_at: now });
    const [active] = await trx('loans')
      .where({ organization_id: organizationId, id: loan.id })
      .update({ status: LoanStatus.ACTIVE, disbursed_at: now })
      .returning('*');
    return active as LoanRow;
  });
}

/** A loan, locked for the rest of the database transaction (money steps on it go one at a time). */
async function lockLoan(trx: Knex.Transaction, organizationId: string, loanId: string): Promise<LoanRow | undefined> {
  return trx('loans').where({ organization_id: organizationId, id: loanId }).forUpdate().first();
}

/**
 * Holds a loan's collateral on the borrower's current account, or releases it: one journal
 * entry, unique per loan and kind. Answers the entry's id (a hold's id is the loan's
 * collateral_hold_id).
 */
export async function moveCollateral(
  trx: Knex.Transaction,
  kind: 'COLLATERAL_HOLD' | 'COLLATERAL_RELEASE',
  loan: { id: string; currentAccountId: string; currency: string; amount: number },
): Promise<string> {
  const held = ledgerAccounts.collateral(loan.currentAccountId);
  const available = ledgerAccounts.customer(loan.currentAccountId);
  const [from, to] = kind === 'COLLATERAL_HOLD' ? [available, held] : [held, available];
  await postJournal(trx, {
    transactionId: loan.id,
    kind,
    currency: loan.currency,
    legs: [
      { account: from, amount: loan.amount },
      { account: to, amount: -loan.amount },
    ],
  });
  const entry = await trx('journal_entries').where({ transaction_id: loan.id, kind }).first('id');
  return (entry as { id: string }).id;
}

/** When each of a loan's installments falls due, in days after the loan's start date, in order. */
export function installmentDueDays(
  db: Knex,
  organizationId: string,
  loanId: string,
): Promise<{ position: number; dueDay: number }[]> {
  return db('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .where({ 'i.organization_id': organizationId, 'i.loan_id': loanId })
    .orderBy('i.position')
    .select('i.position', db.raw('(i.due_date - l.start_date)::int as "dueDay"'));
}

/** What Postgres shows of the steps of every ACTIVE loan on an account (domain/loans/steps.ts). */
export async function accountLoanSteps(
  trx: Knex | Knex.Transaction,
  organizationId: string,
  accountId: string,
): Promise<LoanSteps[]> {
  const { rows } = await trx.raw<{
    rows: {
      id: string;
      day_ms: string | null;
      disbursed_at: Date | null;
      penalty: LoanSteps['penalty'] | null;
      charged: number;
      installments: LoanSteps['installments'] | null;
    }[];
  }>(
    `select l.id, a.day_ms, l.disbursed_at, a.terms -> 'penalty' as penalty,
            (select count(*) from loan_penalty_charges c
              where c.organization_id = l.organization_id and c.loan_id = l.id)::int as charged,
            (select json_agg(json_build_object('dueDay', i.due_date - l.start_date, 'scheduleStatus', i.schedule_status)
                             order by i.position)
               from installments i where i.organization_id = l.organization_id and i.loan_id = l.id) as installments
       from loans l join loan_applications a on a.organization_id = l.organization_id and a.id = l.application_id
      where l.organization_id = ? and l.account_id = ? and l.status = ?`,
    [organizationId, accountId, LoanStatus.ACTIVE],
  );
  return rows.map((row) => {
    const dayMs = row.day_ms === null ? undefined : Number(row.day_ms);
    return {
      loanId: row.id,
      clock:
        dayMs === undefined || row.disbursed_at === null
          ? null
          : { anchorMs: loanAnchorMs(row.disbursed_at.getTime(), dayMs), dayMs },
      installments: row.installments ?? [],
      penalty: row.penalty ?? undefined,
      charged: row.charged,
    };
  });
}

/** The installments of every loan on an account, newest loan first, each loan's in order. */
export function accountInstallments(
  db: Knex,
  organizationId: string,
  accountId: string,
): Promise<(InstallmentRow & { currency: string; loan_status: string })[]> {
  return db('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .where({ 'i.organization_id': organizationId, 'i.account_id': accountId })
    .orderBy([
      { column: 'l.created_at', order: 'desc' },
      { column: 'i.position', order: 'asc' },
    ])
    .select('i.*', 'l.currency', 'l.status as loan_status');
}

/**
 * Moves an installment on as time passes: UPCOMING → DUE on its due date, and to OVERDUE after
 * it while anything is outstanding (the loan's arrears date set the first time). Conditional, so
 * a repeated step changes nothing; answers the status it has now.
 */
export async function advanceInstallment(
  db: Knex,
  organizationId: string,
  loanId: string,
  position: number,
  to: 'DUE' | 'OVERDUE',
  now: Date,
): Promise<InstallmentStatus | undefined> {
  return db.transaction(async (trx) => {
    const from = to === 'DUE' ? [InstallmentStatus.UPCOMING] : [InstallmentStatus.UPCOMING, InstallmentStatus.DUE];
    // What time says is kept apart from PAID: a reversed payment puts the installment back there.
    await trx('installments')
      .where({ organization_id: organizationId, loan_id: loanId, position })
      .whereIn('schedule_status', from)
      .update({ schedule_status: to });
    const changed = await trx('installments')
      .where({ organization_id: organizationId, loan_id: loanId, position })
      .whereIn('status', from)
      .update({ status: to, updated_at: now });
    if (changed > 0 && to === 'OVERDUE')
      await trx('loans')
        .where({ organization_id: organizationId, id: loanId })
        .whereNull('arrears_at')
        .update({ arrears_at: now });
    const row = await trx('installments')
      .where({ organization_id: organizationId, loan_id: loanId, position })
      .first('status');
    return (row as { status: InstallmentStatus } | undefined)?.status;
  });
}

/**
 * Closes a loan whose installments are all paid: REPAID, and its collateral released to the
 * borrower's available money (once: the release entry is unique per loan). False while anything
 * is outstanding.
 */
export async function closeIfRepaid(db: Knex, organizationId: string, loanId: string, now: Date): Promise<boolean> {
  return db.transaction(async (trx) => {
    // Under the account's lock, as every servicing step: a reversal cannot reopen what this closes.
    const account: { account_id: string } | undefined = await trx('loans')
      .where({ organization_id: organizationId, id: loanId })
      .first('account_id');
    if (!account) throw new Error(`no loan ${loanId}`);
    await lockAccount(trx, account.account_id);
    const loan = await lockLoan(trx, organizationId, loanId);
    if (!loan) throw new Error(`no loan ${loanId}`);
    if (loan.status === LoanStatus.REPAID) return true;
    const open = await trx('installments')
      .where({ organization_id: organizationId, loan_id: loanId })
      .whereNot({ status: InstallmentStatus.PAID })
      .first('id');
    if (open || loan.status !== LoanStatus.ACTIVE) return false;
    const collateral = Number(loan.collateral_amount);
    if (collateral > 0)
      await moveCollateral(trx, 'COLLATERAL_RELEASE', {
        id: loan.id,
        currentAccountId: loan.current_account_id,
        currency: loan.currency,
        amount: collateral,
      });
    await trx('loans')
      .where({ organization_id: organizationId, id: loan.id })
      .update({ status: LoanStatus.REPAID, closed_at: now });
    return true;
  });
}

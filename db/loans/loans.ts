import type { Knex } from 'knex';
import { borrowingLimit, InstallmentStatus, LoanApplicationStatus, LoanStatus } from '../../domain/loans/terms';
import type { ScheduledInstallment } from '../../domain/loans/schedule';
import { lockAccount } from '../accounts/accounts';
import { isUniqueViolation } from '../knex';
import { accountBalance, ledgerAccounts, postJournal } from '../ledger/ledger';
import { borrowerFacts, type LoanApplicationRow } from './applications';
import { availableCredit, type CreditLine, openCreditLine } from './credit-lines';

/**
 * Loans and their installments (migration 20261123100000_loans). Every money step is one
 * database transaction and one journal entry unique per (loan id, kind), so a step run twice
 * (an activity retried after a crash) moves the money once.
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

export type Acceptance =
  | { outcome: 'accepted'; application: LoanApplicationRow; loan: LoanRow }
  | { outcome: 'insufficient_funds'; available: number }
  | { outcome: 'not_eligible'; reason: string; detail: string }
  | { outcome: 'not_open'; application: LoanApplicationRow };

/**
 * Whether the borrower may take `amount` now: what the offer was made on may have changed since
 * (a waiting list, KYC, arrears, another loan taken in the meantime, on any product). Read inside
 * the acceptance's transaction, under the borrower's lock.
 */
async function eligibilityNow(
  trx: Knex.Transaction,
  application: LoanApplicationRow,
  amount: number,
): Promise<{ reason: string; detail: string } | undefined> {
  const facts = await borrowerFacts(trx, application.organization_id, application.user_id);
  if (facts.userStatus !== 'ACTIVE') return { reason: 'NOT_ELIGIBLE', detail: 'The borrower is not an active user' };
  if (!facts.kycApproved)
    return { reason: 'KYC_NOT_APPROVED', detail: "The borrower's identity verification is not approved" };
  if (facts.loansInArrears > 0)
    return { reason: 'IN_ARREARS', detail: 'A loan of the borrower has an overdue installment' };
  if (application.terms.productType === 'REVOLVING_CREDIT') {
    // A draw: term loans still run one at a time, and the draw must fit the line's available credit.
    if (facts.termLoansRunning > 0)
      return { reason: 'LOAN_RUNNING', detail: 'A loan of the borrower is not repaid yet' };
    const available = await availableCredit(trx, application.organization_id, await creditLineOf(trx, application));
    if (amount > available) return { reason: 'OVER_LIMIT', detail: `Above the available credit of ${available}` };
    return undefined;
  }
  if (facts.loansRunning > 0) return { reason: 'LOAN_RUNNING', detail: 'A loan of the borrower is not repaid yet' };
  const product = await trx('loan_products')
    .where({ organization_id: application.organization_id, id: application.product_id })
    .first('first_loan_limit', 'limit_step', 'max_amount');
  const limit = borrowingLimit(
    {
      firstLoanLimit: Number(product.first_loan_limit),
      limitStep: Number(product.limit_step),
      maxAmount: Number(product.max_amount),
    },
    facts.loansRepaid,
  );
  if (amount > limit) return { reason: 'OVER_LIMIT', detail: `Above the borrower's limit of ${limit}` };
  return undefined;
}

/** The borrower's credit line on a revolving offer's product. */
function creditLineOf(trx: Knex.Transaction, application: LoanApplicationRow): Promise<CreditLine> {
  return openCreditLine(trx, application.organization_id, {
    userId: application.user_id,
    productId: application.product_id,
    accountId: application.account_id,
    creditLimit: application.terms.creditLimit ?? 0,
    currency: application.currency,
  });
}

/**
 * Takes an open offer: the loan and its schedule are made, the collateral is held on the
 * borrower's current account (its available balance checked under a lock), and the offer is
 * ACCEPTED, all in one database transaction. Taken already by this acceptance (`acceptedBy`, a
 * retried step): answers what was taken, changing nothing; taken by another: not open.
 */
export async function acceptOffer(
  db: Knex,
  organizationId: string,
  applicationId: string,
  taken: {
    loanId: string;
    loanAmount: number;
    interest: number;
    tenure: number;
    collateralAmount: number;
    startDate: string;
    installments: ScheduledInstallment[];
    /** The acceptance's own id (the Update's), kept for a retried request to find. */
    acceptedBy: string;
  },
  now: Date,
): Promise<Acceptance> {
  return db
    .transaction(async (trx) => acceptInTransaction(trx, organizationId, applicationId, taken, now))
    .catch((error: unknown) => {
      // One running loan per borrower is also the database's rule (a unique index).
      if (isUniqueViolation(error))
        return {
          outcome: 'not_eligible' as const,
          reason: 'LOAN_RUNNING',
          detail: 'A loan of the borrower is not repaid yet',
        };
      throw error;
    });
}

async function acceptInTransaction(
  trx: Knex.Transaction,
  organizationId: string,
  applicationId: string,
  taken: Parameters<typeof acceptOffer>[3],
  now: Date,
): Promise<Acceptance> {
  const application: LoanApplicationRow | undefined = await trx('loan_applications')
    .where({ organization_id: organizationId, id: applicationId })
    .forUpdate()
    .first();
  if (!application) throw new Error(`no loan application ${applicationId}`);
  if (application.status !== LoanApplicationStatus.APPROVED) {
    // Only this very acceptance (a retried step) is answered its loan: another one finds the offer taken.
    const loan =
      application.loan_id && application.accepted_by === taken.acceptedBy
        ? await trx('loans').where({ organization_id: organizationId, id: application.loan_id }).first()
        : undefined;
    return loan
      ? { outcome: 'accepted' as const, application, loan: loan as LoanRow }
      : { outcome: 'not_open' as const, application };
  }
  // One acceptance per borrower at a time: the checks below then see every loan taken before.
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [
    `loan-borrower:${organizationId}:${application.user_id}`,
  ]);
  const refused = await eligibilityNow(trx, application, taken.loanAmount);
  if (refused) return { outcome: 'not_eligible' as const, ...refused };
  const current = application.current_account_id;
  // The current account holds the collateral and receives the loan: only once the bank has it.
  if ((await lockAccount(trx, current))?.status !== 'ACTIVE')
    return {
      outcome: 'not_eligible' as const,
      reason: 'ACCOUNT_NOT_ACTIVATED',
      detail: "The borrower's current account is not activated yet",
    };
  const { available } = await accountBalance(trx, current);
  if (available < taken.collateralAmount) return { outcome: 'insufficient_funds' as const, available };

  const holdId =
    taken.collateralAmount > 0
      ? await moveCollateral(trx, 'COLLATERAL_HOLD', {
          id: taken.loanId,
          currentAccountId: current,
          currency: application.currency,
          amount: taken.collateralAmount,
        })
      : null;
  const [loan] = await trx('loans')
    .insert({
      id: taken.loanId,
      organization_id: organizationId,
      user_id: application.user_id,
      application_id: application.id,
      account_id: application.account_id,
      current_account_id: current,
      status: LoanStatus.PENDING_DISBURSEMENT,
      principal: taken.loanAmount,
      interest: taken.interest,
      collateral_amount: taken.collateralAmount,
      collateral_hold_id: holdId,
      currency: application.currency,
      tenure_duration: taken.tenure,
      tenure_unit: application.tenure_unit,
      start_date: taken.startDate,
      credit_line_id:
        application.terms.productType === 'REVOLVING_CREDIT' ? (await creditLineOf(trx, application)).id : null,
    })
    .returning('*');
  await trx('installments').insert(
    taken.installments.map((installment) => ({
      organization_id: organizationId,
      loan_id: taken.loanId,
      account_id: application.account_id,
      position: installment.position,
      due_date: installment.dueDate,
      principal: installment.principal,
      interest: installment.interest,
    })),
  );
  const [accepted] = await trx('loan_applications')
    .where({ organization_id: organizationId, id: application.id })
    .update({
      status: LoanApplicationStatus.ACCEPTED,
      loan_amount: taken.loanAmount,
      tenure_duration: taken.tenure,
      collateral_amount: taken.collateralAmount,
      collateral_hold_id: holdId,
      total_repayment_amount: taken.loanAmount + taken.interest,
      loan_id: taken.loanId,
      accepted_by: taken.acceptedBy,
      accepted_at: now,
      updated_at: now,
    })
    .returning('*');
  // The borrower's other open offers are withdrawn: one loan at a time.
  await trx('loan_applications')
    .where({ organization_id: organizationId, user_id: application.user_id, status: LoanApplicationStatus.APPROVED })
    .whereNot({ id: application.id })
    .update({ status: LoanApplicationStatus.CANCELLED, updated_at: now });
  return { outcome: 'accepted' as const, application: accepted as LoanApplicationRow, loan: loan as LoanRow };
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
async function moveCollateral(
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
    .select('i.*', db.raw(`to_char(i.due_date, 'YYYY-MM-DD') as due_date`), 'l.currency', 'l.status as loan_status');
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

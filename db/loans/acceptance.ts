import type { Knex } from 'knex';
import { drawRefusal, limitRefusal, LOAN_RUNNING, type Refusal, standingRefusal } from '../../domain/loans/eligibility';
import type { ScheduledInstallment } from '../../domain/loans/schedule';
import { LoanApplicationStatus, LoanStatus } from '../../domain/loans/terms';
import { lockAccount } from '../accounts/accounts';
import { isUniqueViolation } from '../knex';
import { accountBalance } from '../ledger/ledger';
import { borrowerFacts, type LoanApplicationRow } from './applications';
import { availableCredit, type CreditLine, openCreditLine } from './credit-lines';
import { type LoanRow, moveCollateral } from './loans';

/**
 * Taking an offer (apart from the loan's later money steps in loans.ts): eligibility read again
 * under the borrower's lock, decided by domain/loans/eligibility.ts, then the loan, its schedule
 * and its collateral hold made in the same database transaction.
 */
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
): Promise<Refusal | undefined> {
  const facts = await borrowerFacts(trx, application.organization_id, application.user_id);
  const revolving = application.terms.productType === 'REVOLVING_CREDIT';
  const refused = standingRefusal(facts, revolving);
  if (refused) return refused;
  if (revolving) {
    // A draw (term loans still run one at a time: the standing's check) must fit the line's available credit.
    const available = await availableCredit(trx, application.organization_id, await creditLineOf(trx, application));
    return drawRefusal(amount, available);
  }
  const product = await trx('loan_products')
    .where({ organization_id: application.organization_id, id: application.product_id })
    .first('first_loan_limit', 'limit_step', 'max_amount');
  return limitRefusal(
    amount,
    {
      firstLoanLimit: Number(product.first_loan_limit),
      limitStep: Number(product.limit_step),
      maxAmount: Number(product.max_amount),
    },
    facts.loansRepaid,
  );
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
      if (isUniqueViolation(error)) return { outcome: 'not_eligible' as const, ...LOAN_RUNNING };
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

import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Revolving credit (migration 20261124100000_loan_servicing): a borrower's line on a
 * REVOLVING_CREDIT product, one per borrower and product. Each draw is a loan (a cycle) on the
 * line; what its cycles still owe in principal is drawn, the rest of the limit is available, so a
 * repayment of principal restores the available limit as it lands.
 */
export interface CreditLine {
  id: string;
  credit_limit: string;
}

type Db = Knex | Knex.Transaction;

/** The borrower's line on the product, opened at the product's limit the first time. */
export async function openCreditLine(
  db: Db,
  organizationId: string,
  line: { userId: string; productId: string; accountId: string; creditLimit: number; currency: string },
): Promise<CreditLine> {
  const where = { organization_id: organizationId, user_id: line.userId, product_id: line.productId };
  await db('credit_lines')
    .insert({
      id: randomUUID(),
      ...where,
      account_id: line.accountId,
      credit_limit: line.creditLimit,
      currency: line.currency,
    })
    .onConflict(['organization_id', 'user_id', 'product_id'])
    .ignore();
  return db('credit_lines').where(where).first('id', 'credit_limit') as Promise<CreditLine>;
}

/** The limit less the principal the line's open cycles still owe. */
export async function availableCredit(db: Db, organizationId: string, line: CreditLine): Promise<number> {
  const row: { drawn: string | null } | undefined = await db('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .where({ 'l.organization_id': organizationId, 'l.credit_line_id': line.id })
    .whereIn('l.status', ['PENDING_DISBURSEMENT', 'ACTIVE'])
    .first(db.raw('sum(i.principal - i.principal_paid) as drawn'));
  return Math.max(0, Number(line.credit_limit) - Number(row?.drawn ?? 0));
}

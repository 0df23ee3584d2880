import type { Knex } from 'knex';
import { LoanApplicationStatus, type OfferTerms, type PeriodUnit } from '../../domain/loans/terms';
import { isUniqueViolation } from '../knex';

/** A loan application: an offer and what became of it (migration 20261123100000_loans). */
export interface LoanApplicationRow {
  id: string;
  resource_id: string;
  organization_id: string;
  user_id: string;
  product_id: string;
  product_code: string;
  account_id: string;
  current_account_id: string;
  status: LoanApplicationStatus;
  loan_amount: string;
  tenure_duration: number;
  tenure_unit: PeriodUnit;
  terms: OfferTerms;
  currency: string;
  expires_at: Date;
  collateral_amount: string | null;
  collateral_hold_id: string | null;
  total_repayment_amount: string | null;
  loan_id: string | null;
  /** The acceptance's id (the Update's, from the Idempotency-Key when there was one). */
  accepted_by: string | null;
  created_at: Date;
  accepted_at: Date | null;
  disbursed_at: Date | null;
  expired_at: Date | null;
  /** The length of a schedule day its run was started with (null: made before offers kept it). */
  day_ms: string | null;
}

export type NewOffer = Pick<
  LoanApplicationRow,
  | 'id'
  | 'resource_id'
  | 'user_id'
  | 'product_id'
  | 'product_code'
  | 'account_id'
  | 'current_account_id'
  | 'tenure_duration'
  | 'tenure_unit'
  | 'terms'
  | 'currency'
  | 'expires_at'
> & { loan_amount: number; day_ms: number };

/** What eligibility is decided on, read in one round trip. */
export interface BorrowerFacts {
  userStatus: string | null;
  kycApproved: boolean;
  loansInArrears: number;
  loansRunning: number;
  /** Running loans that are not revolving-credit draws. */
  termLoansRunning: number;
  loansRepaid: number;
}

export async function borrowerFacts(
  db: Knex | Knex.Transaction,
  organizationId: string,
  userId: string,
): Promise<BorrowerFacts> {
  const { rows } = await db.raw<{ rows: Record<string, unknown>[] }>(
    `select
       (select u.status from users u
         where u.id = :user and (u.organization_id = :org
           or exists (select 1 from user_access a where a.user_id = u.id and a.organization_id = :org))) as user_status,
       exists (select 1 from kyc_applications k
                where k.organization_id = :org and k.user_id = :user and k.status = 'APPROVED') as kyc_approved,
       (select count(distinct i.loan_id) from installments i join loans l on l.id = i.loan_id
         where l.organization_id = :org and l.user_id = :user and i.status = 'OVERDUE') as in_arrears,
       (select count(*) from loans l
         where l.organization_id = :org and l.user_id = :user and l.status in ('PENDING_DISBURSEMENT', 'ACTIVE')) as running,
       (select count(*) from loans l
         where l.organization_id = :org and l.user_id = :user and l.status in ('PENDING_DISBURSEMENT', 'ACTIVE')
           and l.credit_line_id is null) as term_running,
       (select count(*) from loans l
         where l.organization_id = :org and l.user_id = :user and l.status = 'REPAID' and l.arrears_at is null
           and l.credit_line_id is null) as repaid`,
    { org: organizationId, user: userId },
  );
  const row = rows[0]!;
  return {
    userStatus: (row.user_status as string | null) ?? null,
    kycApproved: row.kyc_approved === true,
    loansInArrears: Number(row.in_arrears),
    loansRunning: Number(row.running),
    termLoansRunning: Number(row.term_running),
    loansRepaid: Number(row.repaid),
  };
}

/** The borrower's live offer on a product (at most one: a partial unique index). */
export function findLiveOffer(
  db: Knex,
  organizationId: string,
  userId: string,
  productId: string,
): Promise<LoanApplicationRow | undefined> {
  return db('loan_applications')
    .where({ organization_id: organizationId, user_id: userId, product_id: productId, status: 'APPROVED' })
    .first();
}

/**
 * Stores a new offer as the borrower's live one (a unique index: one per borrower and product).
 * When a concurrent request stored one first: on the same terms (amount), that one is answered
 * (`created` false); on other terms it is withdrawn, as a live offer on other terms always is,
 * and the insert tried again, as it is when the rival was withdrawn or taken meanwhile. Undefined
 * when rivals kept changing the offer through every attempt (the caller answers a conflict).
 */
export async function createOffer(
  db: Knex,
  organizationId: string,
  offer: NewOffer,
  now: Date,
): Promise<{ row: LoanApplicationRow; created: boolean } | undefined> {
  for (let attempt = 0; attempt < OFFER_ATTEMPTS; attempt++) {
    try {
      const [row] = await db('loan_applications')
        .insert({
          ...offer,
          organization_id: organizationId,
          status: LoanApplicationStatus.APPROVED,
          terms: JSON.stringify(offer.terms),
        })
        .returning('*');
      return { row: row as LoanApplicationRow, created: true };
    } catch (error) {
      if (!isUniqueViolation(error, 'loan_applications_one_live_offer')) throw error;
      const live = await findLiveOffer(db, organizationId, offer.user_id, offer.product_id);
      if (live && Number(live.loan_amount) === offer.loan_amount) return { row: live, created: false };
      // Not withdrawn when no attempt is left: the borrower keeps the rival's offer.
      if (live && attempt < OFFER_ATTEMPTS - 1) await cancelOffer(db, organizationId, live.id, now);
    }
  }
  return undefined;
}

/** Inserts tried before a borrower whose live offer keeps changing under them is answered with a conflict. */
const OFFER_ATTEMPTS = 5;

export function findLoanApplication(
  db: Knex | Knex.Transaction,
  organizationId: string,
  id: string,
): Promise<LoanApplicationRow | undefined> {
  return db('loan_applications').where({ organization_id: organizationId, id }).first();
}

/** Expires an offer still open; answers its status afterwards (EXPIRED, or what it became first). */
export async function expireOffer(
  db: Knex,
  organizationId: string,
  id: string,
  now: Date,
): Promise<LoanApplicationStatus | undefined> {
  await db('loan_applications')
    .where({ organization_id: organizationId, id, status: LoanApplicationStatus.APPROVED })
    .update({ status: LoanApplicationStatus.EXPIRED, expired_at: now, updated_at: now });
  const row = await db('loan_applications').where({ organization_id: organizationId, id }).first('status');
  return (row as { status: LoanApplicationStatus } | undefined)?.status;
}

/** Withdraws an offer whose workflow could not be started (so the borrower may ask again). */
export async function cancelOffer(db: Knex, organizationId: string, id: string, now: Date): Promise<void> {
  await db('loan_applications')
    .where({ organization_id: organizationId, id, status: LoanApplicationStatus.APPROVED })
    .update({ status: LoanApplicationStatus.CANCELLED, updated_at: now });
}

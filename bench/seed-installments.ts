import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { BACKFILL } from '../db/migrations/20261208100000_installment_transaction_views';
import { findProduct, offerTerms } from '../db/loans/products';
import { DEMO } from '../db/seeds/demo';

/** Rows per insert statement: keeps Postgres's and this process's memory bounded. */
const CHUNK = 100_000;
const INSTALLMENTS = 4;
/** Every event pays this much of one installment: 900 principal and 100 interest (minor units). */
const PAID = { principal: 900, interest: 100 };
const ORG = DEMO.organizations.demo.id;
/** Brian: KYC approved, a current and a credit account (the demo borrower), whose repayments these are. */
export const BORROWER = DEMO.users.customerByAuthId;
export const CREDIT = DEMO.accounts.borrowerCredit.id;
const CURRENT = DEMO.accounts.borrowerCurrent.id;

/**
 * One ACTIVE loan of INSTALLMENTS installments on the borrower's credit account, and events
 * repayments of it as the service records them: each a POSTED push on the credit account
 * (transactions), its event (loan_transactions, id = the push's) and one allocation record
 * paying part of an installment, oldest installment first (installment_allocations). Ids are
 * md5 of the event's number, so each chunk's three inserts find one another's rows.
 */
export async function seedRepayments(db: Knex, events: number): Promise<{ loanId: string; installmentId: string }> {
  if (!Number.isSafeInteger(events) || events < 1_000 || events % INSTALLMENTS !== 0)
    throw new Error(`the repayment events must be a multiple of ${INSTALLMENTS} of at least 1000`);
  const started = performance.now();
  const perInstallment = events / INSTALLMENTS;
  const principal = perInstallment * PAID.principal;
  const interest = perInstallment * PAID.interest;
  const product = (await findProduct(db, ORG, 'partner-b'))!;
  const applicationId = randomUUID();
  const loanId = randomUUID();
  // A year ago, so a million events a few seconds apart end about now.
  const start = new Date(Date.now() - 365 * 86_400_000);
  const startDate = start.toISOString().slice(0, 10);
  await db('loan_applications').insert({
    id: applicationId,
    resource_id: `lap_bench_${applicationId.slice(0, 8)}`,
    organization_id: ORG,
    user_id: BORROWER.id,
    product_id: product.id,
    product_code: product.code,
    account_id: CREDIT,
    current_account_id: CURRENT,
    status: 'DISBURSED',
    loan_amount: INSTALLMENTS * principal,
    tenure_duration: INSTALLMENTS,
    tenure_unit: 'WEEKS',
    terms: JSON.stringify(offerTerms(product)),
    currency: 'KES',
    expires_at: new Date(start.getTime() + 86_400_000),
    collateral_amount: 0,
    total_repayment_amount: INSTALLMENTS * (principal + interest),
    loan_id: loanId,
    created_at: start,
    accepted_at: start,
    disbursed_at: start,
  });
  await db('loans').insert({
    id: loanId,
    organization_id: ORG,
    user_id: BORROWER.id,
    application_id: applicationId,
    account_id: CREDIT,
    current_account_id: CURRENT,
    status: 'ACTIVE',
    // The last installment is still owed an extra 1,000.00 of principal: the loan stays ACTIVE.
    principal: INSTALLMENTS * principal + 100_000,
    interest: INSTALLMENTS * interest,
    collateral_amount: 0,
    currency: 'KES',
    tenure_duration: INSTALLMENTS,
    tenure_unit: 'WEEKS',
    start_date: startDate,
    created_at: start,
    disbursed_at: start,
  });
  const installments = (await db('installments')
    .insert(
      Array.from({ length: INSTALLMENTS }, (_, i) => {
        const last = i === INSTALLMENTS - 1;
        return {
          organization_id: ORG,
          loan_id: loanId,
          account_id: CREDIT,
          position: i + 1,
          due_date: new Date(start.getTime() + (i + 1) * 7 * 86_400_000).toISOString().slice(0, 10),
          principal: principal + (last ? 100_000 : 0),
          interest,
          principal_paid: principal,
          interest_paid: interest,
          status: last ? 'OVERDUE' : 'PAID',
          schedule_status: 'OVERDUE',
        };
      }),
    )
    .returning(['id', 'position'])) as { id: string; position: number }[];

  const spacingSeconds = (365 * 86_400) / events;
  const params = {
    org: ORG,
    account: CREDIT,
    loan: loanId,
    start: start.toISOString(),
    spacing: spacingSeconds,
    per: perInstallment,
    principal: PAID.principal,
    interest: PAID.interest,
  };
  for (let lo = 1; lo <= events; lo += CHUNK) {
    const hi = Math.min(events, lo + CHUNK - 1);
    await db.transaction(async (trx) => {
      const id = `md5('bench-repayment-' || n)::uuid`;
      const at = `(:start::timestamptz + n * :spacing::float8 * interval '1 second')`;
      await trx.raw(
        `insert into transactions (id, resource_id, organization_id, account_id, type, status, amount, fee_amount,
           currency, mobile_number, details, callback_token, provider_request_attempted_at, checkout_request_id,
           merchant_request_id, mobilemoney_transaction_id, result_code, transacted_at, confirmed_at, posted_at,
           created_at, updated_at)
         select ${id}, 'trx_bench' || lpad(n::text, 12, '0'), :org, :account, 'STK_PUSH', 'POSTED',
                :principal::bigint + :interest::bigint, 0, 'KES', '+254722' || lpad((n % 100000)::text, 5, '0') || '0',
                jsonb_build_object('type', 'PAYBILL', 'direction', 'COLLECTION', 'account_id', :account::text,
                                   'paybill_number', '174379', 'account_reference', lpad(n::text, 12, '0')),
                md5('bench-token-' || n), ${at}, 'ws_CO_bench_' || n, 'bench-' || n, 'BENCH' || lpad(n::text, 10, '0'),
                '0', ${at}, ${at}, ${at}, ${at}, ${at}
           from generate_series(:lo::int, :hi::int) n`,
        { ...params, lo, hi },
      );
      // In n order, so seq (an identity) follows the events' order.
      await trx.raw(
        `insert into loan_transactions (id, resource_id, organization_id, account_id, kind, transaction_id, loan_id,
           amount, allocated_amount, overpaid_amount, currency, effective_at, created_at)
         select ${id}, 'trx_bench' || lpad(n::text, 12, '0'), :org, :account, 'REPAYMENT', ${id}, :loan,
                :principal::bigint + :interest::bigint, :principal::bigint + :interest::bigint, 0, 'KES', ${at}, ${at}
           from generate_series(:lo::int, :hi::int) n
          order by n`,
        { ...params, lo, hi },
      );
      await trx.raw(
        `insert into installment_allocations (organization_id, event_id, seq, installment_id, loan_id, account_id,
           position, allocated_amount, principal_amount, interest_amount, arrears_amount, effect, source,
           effective_at, allocated_at)
         select e.organization_id, e.id, e.seq, i.id, :loan, e.account_id, i.position,
                :principal::bigint + :interest::bigint, :principal, :interest, 0,
                case when n % :per::int = 0 and i.position < ${INSTALLMENTS} then 'OBLIGATION_SETTLED'
                     else 'PARTIALLY_SETTLED' end,
                'LIVE', e.effective_at, e.created_at
           from generate_series(:lo::int, :hi::int) n
           join loan_transactions e on e.id = ${id}
           join installments i on i.loan_id = :loan and i.position = (n - 1) / :per::int + 1`,
        { ...params, lo, hi },
      );
      // The lists' items, rendered as the read model's migration renders a history written before
      // it, in the same transaction (every event has its item when it commits).
      for (const statement of BACKFILL) await trx.raw(statement);
    });
    console.error(
      `repayment events: ${hi.toLocaleString('en')} of ${events.toLocaleString('en')} repayment events written (${((performance.now() - started) / 1000).toFixed(0)} s)`,
    );
  }
  for (const table of [
    'transactions',
    'loan_transactions',
    'installment_allocations',
    'loan_transaction_views',
    'installment_allocation_views',
    'installments',
    'loans',
  ])
    await db.raw('analyze ??', [table]);
  // The second installment: events / INSTALLMENTS allocation records, neither end of the account's list.
  return { loanId, installmentId: installments.find((i) => i.position === 2)!.id };
}

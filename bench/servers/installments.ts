import { findProduct, offerTerms } from '../../db/loans/products';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pg from 'pg';
import { encodeCursor } from '../../api/loans/transactions';
import { loadConfig } from '../../config';
import { createDb, migrate } from '../../db/knex';
import { BACKFILL } from '../../db/migrations/20261208100000_installment_transaction_views';
import { DEMO, seedDemoData } from '../../db/seeds/demo';
import { startDevelopmentProviders } from '../../dev/simulators';
import { requestToken } from '../../simulators/identity';
import { benchDatabase } from '../database';
import { benchService, type Cleanups, runBenchServer } from './process';

/**
 * Servers for the installment transaction list benchmark (bench/installments.ts), on one real
 * Postgres (DATABASE_URL's server, or an embedded one) and the development identity provider:
 *   baseline  bare Koa answering `SELECT 1` through pg
 *   whoami    GET /v1/auth/whoami of the service (bearer JWT, caller, rate limits in Postgres)
 *   the service's two installment transaction lists for ONE borrower's credit account with
 *   BENCH_EVENTS repayment events (1,000,000; 50,000 with BENCH_QUICK=1), written in bulk SQL:
 *   first, middle and last page of the account list; first and last page of one installment's.
 * Prints their URLs and the borrower's token, as one JSON line. Progress goes to stderr.
 */

const EVENTS = Number(process.env.BENCH_EVENTS ?? (process.env.BENCH_QUICK ? 50_000 : 1_000_000));
/** Rows per insert statement: keeps Postgres's and this process's memory bounded. */
const CHUNK = 100_000;
const INSTALLMENTS = 4;
/** Every event pays this much of one installment: 900 principal and 100 interest (minor units). */
const PAID = { principal: 900, interest: 100 };
const ORG = DEMO.organizations.demo.id;
/** Brian: KYC approved, a current and a credit account (the demo borrower). */
const BORROWER = DEMO.users.customerByAuthId;
const CREDIT = DEMO.accounts.borrowerCredit.id;
const CURRENT = DEMO.accounts.borrowerCurrent.id;

async function main(cleanups: Cleanups) {
  if (!Number.isSafeInteger(EVENTS) || EVENTS < 1_000 || EVENTS % INSTALLMENTS !== 0)
    throw new Error(`BENCH_EVENTS must be a multiple of ${INSTALLMENTS} of at least 1000`);
  const base = loadConfig({ ...process.env, LOG_LEVEL: 'info' });
  const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
  const dev = await startDevelopmentProviders(base);
  cleanups.push(() => dev.close());
  const { idp } = dev;
  const config = { ...dev.config, DATABASE_URL: databaseUrl };
  const db = createDb(databaseUrl, config.DATABASE_POOL_MAX);
  cleanups.push(() => db.destroy());
  await migrate(db);
  await seedDemoData(db, dev.seedOptions);
  const { loanId, installmentId } = await seedRepayments(db);

  const service = await benchService(config, db);

  const pool = new pg.Pool({ connectionString: databaseUrl, max: config.DATABASE_POOL_MAX });
  pool.on('error', () => {}); // idle connections closed at shutdown are expected
  cleanups.push(() => pool.end());
  const baseline = new Koa();
  baseline.use(async (ctx) => {
    const { rows } = await pool.query('select 1 as ok');
    ctx.body = rows[0];
  });

  const origin: Record<string, string> = {};
  for (const [name, app] of [
    ['baseline', baseline],
    ['service', service],
  ] as const) {
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  // Cursors: a page `after` the event just newer than those it shows (the list is newest first).
  const eventSeq = async (olderThan: number) =>
    (await db('loan_transactions').where({ account_id: CREDIT }).orderBy('seq', 'asc').offset(olderThan).first('seq'))
      .seq as string;
  const allocationSeq = async (olderThan: number) =>
    (
      await db('installment_allocations')
        .where({ installment_id: installmentId })
        .orderBy('seq', 'asc')
        .offset(olderThan)
        .first('seq')
    ).seq as string;
  const list = `${origin.service}/v1/accounts/${CREDIT}/installments/transactions`;
  const installmentList = `${origin.service}/v1/accounts/${CREDIT}/installments/${installmentId}/transactions`;
  const token = await requestToken(idp.url, 'backend', { sub: BORROWER.id, aud: config.AUTH_AUDIENCE });
  console.log(
    JSON.stringify({
      events: EVENTS,
      loanId,
      installmentId,
      baseline: `${origin.baseline}/`,
      whoami: `${origin.service}/v1/auth/whoami`,
      firstPage: `${list}?size=20`,
      middlePage: `${list}?size=20&after=${encodeCursor(await eventSeq(EVENTS / 2), `account:${CREDIT}`)}`,
      lastPage: `${list}?size=20&after=${encodeCursor(await eventSeq(20), `account:${CREDIT}`)}`,
      installmentFirstPage: `${installmentList}?size=20`,
      installmentLastPage: `${installmentList}?size=20&after=${encodeCursor(await allocationSeq(20), `installment:${installmentId}`)}`,
      token,
    }),
  );
}

/**
 * One ACTIVE loan of INSTALLMENTS installments on the borrower's credit account, and EVENTS
 * repayments of it as the service records them: each a POSTED push on the credit account
 * (transactions), its event (loan_transactions, id = the push's) and one allocation record
 * paying part of an installment, oldest installment first (installment_allocations). Ids are
 * md5 of the event's number, so each chunk's three inserts find one another's rows.
 */
async function seedRepayments(db: ReturnType<typeof createDb>) {
  const started = performance.now();
  const perInstallment = EVENTS / INSTALLMENTS;
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

  const spacingSeconds = (365 * 86_400) / EVENTS;
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
  for (let lo = 1; lo <= EVENTS; lo += CHUNK) {
    const hi = Math.min(EVENTS, lo + CHUNK - 1);
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
      `installments bench: ${hi.toLocaleString('en')} of ${EVENTS.toLocaleString('en')} repayment events written (${((performance.now() - started) / 1000).toFixed(0)} s)`,
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
  // The second installment: EVENTS / INSTALLMENTS allocation records, neither end of the account's list.
  return { loanId, installmentId: installments.find((i) => i.position === 2)!.id };
}

runBenchServer(main);

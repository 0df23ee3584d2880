import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Knex } from '../../db/knex';
import { DEMO } from '../../db/seeds/demo';
import { inBatches, mapBounded, poster } from '../lib';
import { type BenchBorrower, BENCH_LOAN, seedBorrowers, takeBenchLoans } from '../seed';

/**
 * Who the load suite's requests come from, prepared untimed in a fresh demo database:
 *   - borrowers: KYC approved, a current and a credit account, an ACTIVE loan taken through the
 *     API (offer, then apply; nothing falls due for weeks) and one repayment (allocated before
 *     the measured run), so their installment pages have rows from the first request;
 *   - prospects: KYC approved with both accounts and no loan: they ask for loan eligibility (an
 *     offer, then the same open offer again). One in four has a number the mobile-money
 *     simulator answers "cancelled" for, so some pushes end FAILED;
 *   - the demo network's leader, manager and admin, who list agents.
 */
export const ORG = DEMO.organizations.demo.id;
/** Every push moves KES 10: a repayment never comes near what a loan owes. */
export const PUSH_AMOUNT = 1_000;

export interface LoadCustomer extends BenchBorrower {
  phone: string;
  kycApplication: string;
  token: string;
  /** What a push from `phone` ends as at the simulator (its last digit: 0 paid, 1 cancelled). */
  pushOutcome: 'POSTED' | 'FAILED';
}

export interface LoadBorrower extends LoadCustomer {
  /** The number repayments come from (any payer may repay; the simulator pays it). */
  payer: string;
  /** The first installment of the loan, for the one-installment transaction list. */
  installment: string;
}

export interface Population {
  borrowers: LoadBorrower[];
  prospects: LoadCustomer[];
  /** Tokens of users who may list agents (leader, manager, admin). */
  staff: string[];
  /** The ids of the pushes made in preparation, by customer (what transaction reads start from). */
  prepared: Map<string, string>;
}

const customer = (i: number, prefix: string, lastDigit: number) => ({
  id: randomUUID(),
  current: randomUUID(),
  credit: randomUUID(),
  kycApplication: randomUUID(),
  phone: `+2547${prefix}${String(i).padStart(6, '0')}${lastDigit}`,
  pushOutcome: lastDigit === 0 ? ('POSTED' as const) : ('FAILED' as const),
});

export async function preparePopulation(options: {
  db: Knex;
  apiUrl: string;
  temporal: Client;
  /** A backend bearer token for a user of the demo organization. */
  token: (userId: string) => Promise<string>;
  borrowers: number;
  prospects: number;
}): Promise<Population> {
  const { db, apiUrl } = options;
  const borrowerRows = Array.from({ length: options.borrowers }, (_, i) => ({
    ...customer(i, '1', 0),
    payer: `+25473${String(i).padStart(6, '0')}0`,
  }));
  const prospectRows = Array.from({ length: options.prospects }, (_, i) => customer(i, '4', i % 4 === 3 ? 1 : 0));
  await seedBorrowers(db, ORG, borrowerRows, BENCH_LOAN.deposit);
  await seedBorrowers(db, ORG, prospectRows, 0);
  const { token } = options;
  const withTokens = <T extends { id: string }>(rows: T[]) =>
    mapBounded(rows, async (row) => ({ ...row, token: await token(row.id) }));
  const borrowers = await withTokens(borrowerRows);
  const prospects = await withTokens(prospectRows);
  const staff = await Promise.all([DEMO.users.leader, DEMO.users.manager, DEMO.users.admin].map((u) => token(u.id)));

  // A loan each, through the API: the offer (its run's first task done), then apply.
  const call = poster(
    apiUrl,
    borrowers.map((b) => b.token),
  );
  await takeBenchLoans(call, options.temporal, ORG, borrowers.length);
  const prepared = new Map<string, string>();
  await inBatches(borrowers.length, async (i) => {
    const b = borrowers[i]!;
    const body = { account_id: b.credit, amount: { value: PUSH_AMOUNT, currency: 'KES' }, mobile_number: b.payer };
    prepared.set(b.id, (await call(i, '/v1/transactions/mobilemoney/stk-push', body, 201)).id as string);
  });
  const installments = (await db('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .whereIn(
      'l.user_id',
      borrowers.map((b) => b.id),
    )
    .where('i.position', 1)
    .select('l.user_id', 'i.id')) as { user_id: string; id: string }[];
  const firstInstallment = new Map(installments.map((row) => [row.user_id, row.id]));
  return {
    borrowers: borrowers.map((b) => ({ ...b, installment: firstInstallment.get(b.id)! })),
    prospects,
    staff,
    prepared,
  };
}

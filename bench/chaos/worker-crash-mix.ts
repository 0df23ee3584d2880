import { randomUUID } from 'node:crypto';
import { type BenchApplicant, type BenchBorrower, seedApplicants, seedBorrowers, seedUsers } from '../seed';
import { mapBounded } from '../lib';
import {
  activate,
  type ApiClient,
  type Caller,
  type Ended,
  push,
  sendMoney,
  takeLoan,
  verifyIdentity,
} from './client-flows';
import type { OperationScope } from './consistency';
import type { ChaosDeployment } from './deployment';
import { below, seeded, sleep } from './random';

/**
 * The worker crash suite's mix (./worker-crash.ts runs it): its sizes, the customers seeded
 * before anything is timed, and every operation scheduled at its seeded moment. The same seed
 * draws the same amounts, outcome digits and moments, in the same order, so a failing run can be
 * run again as it was.
 */

export type Kind =
  'stk-push current' | 'stk-push credit' | 'send-money' | 'kyc' | 'loan + payout' | 'repayment' | 'activation';
export const KINDS: Kind[] = [
  'stk-push current',
  'stk-push credit',
  'send-money',
  'kyc',
  'loan + payout',
  'repayment',
  'activation',
];

export interface Sizes {
  pushes: number;
  /** Of `pushes`, those on credit accounts (repayments): a quarter, when there are loans. */
  creditPushes: number;
  payouts: number;
  kyc: number;
  loans: number;
  repayments: number;
  activations: number;
  workers: number;
  kills: number;
  spreadMs: number;
  deadlineMs: number;
  seed: number;
}

/** The sizes from the CHAOS_* environment variables, else the full or the bounded defaults. */
export function sizes(bounded: boolean): Sizes {
  const size = (name: string, full: number, small: number) => {
    const value = Number(process.env[`CHAOS_${name}`] ?? (bounded ? small : full));
    if (!Number.isInteger(value) || value < 0) throw new Error(`CHAOS_${name} must be a whole number`);
    return value;
  };
  const loans = size('LOANS', 20, 3);
  const pushes = size('PUSHES', 200, 24);
  return {
    pushes,
    creditPushes: loans > 0 ? Math.round(pushes / 4) : 0,
    payouts: size('PAYOUTS', 50, 6),
    kyc: size('KYC', 50, 5),
    loans,
    repayments: Math.min(loans, size('REPAYMENTS', 20, 3)),
    activations: size('ACTIVATIONS', 20, 3),
    workers: Math.max(1, size('WORKERS', 3, 2)),
    kills: size('KILLS', 20, 4),
    spreadMs: size('SPREAD_MS', 120_000, 20_000),
    // Bounded: past the longest fallback an operation is built to take here (a 1-minute activity
    // lost with its worker, then a 3-minute provider wait of CHAOS_TIMINGS), so only a stuck
    // operation is counted lost; operations that end sooner end the wait sooner.
    deadlineMs: size('DEADLINE_MS', 600_000, 270_000),
    seed: size('SEED', 20261124, 20261124),
  };
}

/** Amounts in minor units: a loan at the product's minimum, its collateral 10 %, pushes of KES 100. */
const LOAN = { amount: 100_000, collateral: 10_000, weeks: 4, deposit: 50_000 };
const CREDIT_PUSH = 10_000;
const PAYOUT = 50_000;
const SENDER_FUNDS = 10_000_000;
/** The simulators' outcomes by last digit (README, Mobile money and KYC), weighted towards success. */
const DEPOSIT_DIGITS = [0, 1, 0, 2, 0, 3, 0, 5, 0, 0];
const PAYER_DIGITS = [0, 0, 0, 1, 3];
/** B2C: 3 insufficient float, 8 not registered; 7 (queue timeout) is left out: it waits SEND_MONEY_RESULT_WAIT. */
const RECIPIENT_DIGITS = [0, 0, 0, 1, 2, 5, 9, 3, 8];
const ID_DIGITS = [0, 0, 0, 0, 1, 2, 3];

/**
 * How an operation ended. `not started` means it depended on a loan that did not complete;
 * `error` means the suite's own client failed to drive it.
 */
export interface Operation {
  state: Ended['state'] | 'not started' | 'error';
  outcome: string;
  kind: Kind;
  /** From its first request to its end. */
  seconds: number;
}

/** Kenyan numbers nobody else in the run has: a block per role, the outcome digit last. */
const phone = (block: number, n: number, digit: number) => `+2547${block}${String(n).padStart(6, '0')}${digit}`;
const payer = (n: number, digit: number) => `+25410${String(n).padStart(6, '0')}${digit}`;

interface Customer extends BenchBorrower {
  phone: string;
  caller: Caller;
}

/**
 * Who the operations come from, written straight to Postgres before anything is timed (as the
 * bench seeds do): depositors (three pushes each, their registered number's last digit their
 * push outcome), senders (funded, two payouts each), borrowers (KYC approved, money for the
 * collateral, their own number paid out to), KYC applicants (no application yet), and customers
 * whose current account awaits activation (a provisioned KYC subject each).
 */
export async function seedPopulation(deployment: ChaosDeployment, size: Sizes) {
  const { db, organizationId } = deployment;
  const customers = (block: number, n: number, digit: (i: number) => number) =>
    Array.from({ length: n }, (_, i) => ({
      id: randomUUID(),
      current: randomUUID(),
      credit: randomUUID(),
      kycApplication: randomUUID(),
      phone: phone(block, i, digit(i)),
      idNumber: String(20_000_000 + block * 100_000 + i),
    }));
  const currentPushes = size.pushes - size.creditPushes;
  // The outcomes in their proportions: each depositor's number ends in the next digit of the list.
  const depositors = customers(1, Math.ceil(currentPushes / 3), (i) => DEPOSIT_DIGITS[i % DEPOSIT_DIGITS.length]!);
  const senders = customers(2, Math.ceil(size.payouts / 2), () => 0);
  const borrowers = customers(3, size.loans, () => 0);
  const applicants = customers(4, size.kyc, () => 0);
  const activating: BenchApplicant[] = customers(5, size.activations, () => 0);
  await seedBorrowers(db, organizationId, depositors, 0);
  await seedBorrowers(db, organizationId, senders, SENDER_FUNDS);
  await seedBorrowers(db, organizationId, borrowers, LOAN.deposit);
  await seedApplicants(db, organizationId, activating);
  await seedUsers(db, organizationId, applicants);
  const withCaller = async <T extends { id: string; phone: string }>(list: T[]) =>
    mapBounded(list, async (c) => ({ ...c, caller: { token: await deployment.token(c.id) } }));
  return {
    depositors: (await withCaller(depositors)) as Customer[],
    senders: (await withCaller(senders)) as Customer[],
    borrowers: (await withCaller(borrowers)) as Customer[],
    applicants: await withCaller(applicants),
    activating: await withCaller(activating),
  };
}

export type Population = Awaited<ReturnType<typeof seedPopulation>>;

/** The ids of what the mix started, for the consistency checks to look at only those. */
export interface MixScope extends OperationScope {
  transactions: string[];
  kycApplications: string[];
  loanApplications: string[];
  activations: string[];
}

/** A started mix: every operation (filled in as it ends), the ids it created, and its jobs to wait for. */
export interface Mix {
  operations: Operation[];
  scope: MixScope;
  jobs: Promise<void>[];
}

/** What the schedulers below share: the seeded draws, the client, the population and the mix. */
interface Schedule extends Mix {
  api: ApiClient;
  deployment: ChaosDeployment;
  size: Sizes;
  population: Population;
  next: () => number;
}

const pick = <T>(s: Schedule, items: readonly T[]) => items[below(s.next, items.length)]!;
/** A random moment within the spread, in ms from the mix's start. */
const at = (s: Schedule) => s.next() * s.size.spreadMs;
const ids = (list: string[]) => (id: string) => void list.push(id);

/** An operation, run after `when` ms or once `when` says it may (false: it never starts). */
async function run(
  s: Schedule,
  kind: Kind,
  when: number | (() => Promise<boolean>),
  flow: () => Promise<Ended>,
): Promise<void> {
  const operation: Operation = { kind, state: 'not started', outcome: 'its loan did not complete', seconds: 0 };
  s.operations.push(operation);
  if (typeof when === 'number') await sleep(when);
  else if (!(await when())) return;
  const begun = Date.now();
  try {
    Object.assign(operation, await flow());
  } catch (error) {
    // The suite's own client failed (a simulator's control API, a bad answer): not the service's loss.
    Object.assign(operation, { state: 'error', outcome: `client error: ${String(error)}` });
  }
  operation.seconds = (Date.now() - begun) / 1000;
}

/**
 * Schedules every operation of the mix, each at its seeded moment from now, and answers at once.
 * The draws happen in one fixed order (deposits, payouts, verifications, activations, loans),
 * which is what makes a seed give the same run.
 */
export function startMix(options: {
  api: ApiClient;
  deployment: ChaosDeployment;
  size: Sizes;
  population: Population;
}): Mix {
  const s: Schedule = {
    ...options,
    next: seeded(options.size.seed),
    operations: [],
    scope: { transactions: [], kycApplications: [], loanApplications: [], activations: [] },
    jobs: [],
  };
  scheduleDeposits(s);
  schedulePayouts(s);
  scheduleVerifications(s);
  scheduleActivations(s);
  s.population.borrowers.forEach((b, k) => scheduleLoan(s, b, k));
  return { operations: s.operations, scope: s.scope, jobs: s.jobs };
}

function scheduleDeposits(s: Schedule): void {
  const { depositors } = s.population;
  depositors.forEach((c, i) => {
    for (let k = i; k < s.size.pushes - s.size.creditPushes; k += depositors.length) {
      const amount = (1 + below(s.next, 10)) * 10_000; // KES 100 to 1,000
      s.jobs.push(
        run(s, 'stk-push current', at(s), () =>
          push(
            s.api,
            c.caller,
            { account: c.current, credit: false, phone: c.phone, amount, key: `deposit-${k}` },
            ids(s.scope.transactions),
          ),
        ),
      );
    }
  });
}

function schedulePayouts(s: Schedule): void {
  const { senders } = s.population;
  for (let k = 0; k < s.size.payouts; k++) {
    const sender = senders[k % senders.length]!;
    const to = payer(k, pick(s, RECIPIENT_DIGITS));
    s.jobs.push(
      run(s, 'send-money', at(s), () =>
        sendMoney(
          s.api,
          sender.caller,
          { account: sender.current, phone: to, amount: PAYOUT, key: `payout-${k}` },
          ids(s.scope.transactions),
        ),
      ),
    );
  }
}

function scheduleVerifications(s: Schedule): void {
  s.population.applicants.forEach((a, k) => {
    const idNumber = `${30_000_000 + k * 10 + pick(s, ID_DIGITS)}`;
    s.jobs.push(run(s, 'kyc', at(s), () => verifyIdentity(s.api, a.caller, idNumber, ids(s.scope.kycApplications))));
  });
}

function scheduleActivations(s: Schedule): void {
  s.population.activating.forEach((a, k) => {
    s.jobs.push(
      run(s, 'activation', at(s), () =>
        activate(
          s.api,
          a.caller,
          { phone: a.phone, smsUrl: s.deployment.simulators.sms, key: `activation-${k}` },
          ids(s.scope.activations),
        ),
      ),
    );
  });
}

/**
 * A loan, then what depends on it: its repayment and its share of the credit-account pushes,
 * each at a random moment after the principal was paid out (or not at all).
 */
function scheduleLoan(s: Schedule, b: Customer, k: number): void {
  const after: { kind: Kind; delayMs: number; digit: number; key: string }[] = [];
  if (k < s.size.repayments) after.push({ kind: 'repayment', delayMs: at(s) / 4, digit: 0, key: `repayment-${k}` });
  for (let p = k; p < s.size.creditPushes; p += s.population.borrowers.length)
    after.push({ kind: 'stk-push credit', delayMs: at(s) / 4, digit: pick(s, PAYER_DIGITS), key: `credit-${p}` });
  const dependents = after.map(() => {
    let settle: (go: boolean) => void = () => {};
    const go = new Promise<boolean>((resolve) => (settle = resolve));
    return { go, settle };
  });
  after.forEach((d, j) =>
    s.jobs.push(
      run(
        s,
        d.kind,
        async () => (await dependents[j]!.go) && (await sleep(d.delayMs), true),
        () =>
          push(
            s.api,
            b.caller,
            {
              account: b.credit,
              credit: true,
              phone: payer(10_000 + k * 10 + j, d.digit),
              amount: CREDIT_PUSH,
              key: d.key,
            },
            ids(s.scope.transactions),
          ),
      ),
    ),
  );
  s.jobs.push(
    run(s, 'loan + payout', at(s), async () => {
      const loan = await takeLoan(
        s.api,
        b.caller,
        { organizationId: s.deployment.organizationId, ...LOAN, key: `loan-${k}` },
        ids(s.scope.loanApplications),
      );
      if (loan.state !== 'final') return loan;
      const payout = await sendMoney(
        s.api,
        b.caller,
        { account: b.current, phone: b.phone, amount: LOAN.amount, key: `disbursement-${k}` },
        ids(s.scope.transactions),
      );
      dependents.forEach((d) => d.settle(payout.state === 'final'));
      return { state: payout.state, outcome: `${loan.outcome}, payout ${payout.outcome}` };
    }).finally(() => dependents.forEach((d) => d.settle(false))),
  );
}

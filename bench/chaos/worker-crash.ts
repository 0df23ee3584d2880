import { randomUUID } from 'node:crypto';
import { inconsistentLoans } from '../../db/loans/servicing-reads';
import { type BenchApplicant, type BenchBorrower, seedApplicants, seedBorrowers, seedUsers } from '../seed';
import { mapBounded } from '../lib';
import {
  activate,
  ApiClient,
  type Caller,
  type Ended,
  push,
  sendMoney,
  takeLoan,
  verifyIdentity,
} from './client-flows';
import { checkConsistency, describeInFlight, type Figure, type OperationScope, printFigures } from './consistency';
import { type ChaosDeployment, type SuiteOptions, startChaosDeployment, suiteOptionsOf } from './deployment';
import { replayEveryHistory, replayFigures } from './replay';
import { reconcileWithProvider } from './provider-ledger';
import { below, seeded, sleep } from './random';
import { startWebhookAudit } from './webhook-audit';

/**
 * The worker crash suite (issue 19, item 1). The service runs in its deployment shape (API,
 * WORKERS worker processes on one task queue, each simulator, a Temporal dev server, Postgres:
 * each a process; see deployment.ts) and takes a seeded mix through its public API, spread over
 * SPREAD_MS: STK pushes to current accounts (deposits) and to credit accounts (repayments of the
 * loans taken in the run), send-money payouts, KYC verifications by server upload, loans (offer,
 * apply, then the principal paid out to the borrower's phone by send-money), a repayment of each
 * loan, and current-account activations (code read from the SMS simulator, confirmed, onboarded
 * by the bank). Meanwhile a random live worker is SIGKILLed KILLS times at random moments and a
 * new one started in its slot. Once every operation has ended (or DEADLINE_MS passed), it prints
 * per kind what was started, completed, refused and lost, then what a risk team asks: double
 * postings, payouts sent twice at the provider, holds left behind, postings or allocations that
 * do not match, loans whose ledger and schedule disagree, the ledger's total. Every one of those
 * is expected to be 0. A webhook receiver subscribed to every event counts lost events, a state
 * change delivered under two webhook-ids, and deliveries of states that never committed (0 each).
 *
 * Sizes (environment, full / --bounded): CHAOS_PUSHES 200/24 (a quarter on credit accounts),
 * CHAOS_PAYOUTS 50/6, CHAOS_KYC 50/5, CHAOS_LOANS 20/3, CHAOS_REPAYMENTS 20/3 (at most one per
 * loan), CHAOS_ACTIVATIONS 20/3, CHAOS_WORKERS 3/2, CHAOS_KILLS 20/4, CHAOS_SPREAD_MS 120000/20000,
 * CHAOS_DEADLINE_MS (after the spread) 600000/270000; CHAOS_SEED.
 */

/** How long the webhook audit waits, once every operation ended, for the last events to arrive. */
const WEBHOOK_WAIT_MS = 60_000;

type Kind =
  'stk-push current' | 'stk-push credit' | 'send-money' | 'kyc' | 'loan + payout' | 'repayment' | 'activation';
const KINDS: Kind[] = [
  'stk-push current',
  'stk-push credit',
  'send-money',
  'kyc',
  'loan + payout',
  'repayment',
  'activation',
];

interface Sizes {
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

function sizes(bounded: boolean): Sizes {
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
 * How an operation ended; `not started`: it depended on a loan that did not complete; `error`:
 * the suite's own client failed to drive it.
 */
interface Operation {
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

export async function runWorkerCrash(options: SuiteOptions): Promise<boolean> {
  const size = sizes(options.bounded);
  const cleanups: (() => Promise<unknown>)[] = [];
  const began = Date.now();
  try {
    const deployment = await startChaosDeployment({
      workers: size.workers,
      taskQueue: 'chaos-worker-crash',
      cluster: options.cluster,
      cleanups,
    });
    const webhooks = await startWebhookAudit(deployment.db, deployment.organizationId, cleanups);
    const up = Date.now();
    const next = seeded(size.seed);
    const pick = <T>(items: readonly T[]) => items[below(next, items.length)]!;
    const population = await seedPopulation(deployment, size);
    /** The mix starts now: every moment below is counted from here. */
    const ready = Date.now();
    const operations: Operation[] = [];
    const scope = {
      transactions: [] as string[],
      kycApplications: [] as string[],
      loanApplications: [] as string[],
      activations: [] as string[],
    } satisfies OperationScope;
    const ids = (list: string[]) => (id: string) => void list.push(id);
    const deadline = ready + size.spreadMs + size.deadlineMs;
    const api = new ApiClient(deployment.apiUrl, deadline);
    const at = () => next() * size.spreadMs;
    /** An operation, run after `when` ms or once `when` says it may (false: it never starts). */
    const run = async (kind: Kind, when: number | (() => Promise<boolean>), flow: () => Promise<Ended>) => {
      const operation: Operation = { kind, state: 'not started', outcome: 'its loan did not complete', seconds: 0 };
      operations.push(operation);
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
    };

    const { creditPushes } = size;
    const jobs: Promise<void>[] = [];
    population.depositors.forEach((c, i) => {
      for (let k = i; k < size.pushes - creditPushes; k += population.depositors.length) {
        const amount = (1 + below(next, 10)) * 10_000; // KES 100 to 1,000
        jobs.push(
          run('stk-push current', at(), () =>
            push(
              api,
              c.caller,
              { account: c.current, credit: false, phone: c.phone, amount, key: `deposit-${k}` },
              ids(scope.transactions),
            ),
          ),
        );
      }
    });
    for (let k = 0; k < size.payouts; k++) {
      const sender = population.senders[k % population.senders.length]!;
      const to = payer(k, pick(RECIPIENT_DIGITS));
      jobs.push(
        run('send-money', at(), () =>
          sendMoney(
            api,
            sender.caller,
            { account: sender.current, phone: to, amount: PAYOUT, key: `payout-${k}` },
            ids(scope.transactions),
          ),
        ),
      );
    }
    population.applicants.forEach((a, k) => {
      const idNumber = `${30_000_000 + k * 10 + pick(ID_DIGITS)}`;
      jobs.push(run('kyc', at(), () => verifyIdentity(api, a.caller, idNumber, ids(scope.kycApplications))));
    });
    population.activating.forEach((a, k) => {
      jobs.push(
        run('activation', at(), () =>
          activate(
            api,
            a.caller,
            { phone: a.phone, smsUrl: deployment.simulators.sms, key: `activation-${k}` },
            ids(scope.activations),
          ),
        ),
      );
    });
    // Each loan, then what depends on it: its repayment and its share of the credit-account
    // pushes, each at a random moment after the principal was paid out (or not at all).
    population.borrowers.forEach((b, k) => {
      const after: { kind: Kind; delayMs: number; digit: number; key: string }[] = [];
      if (k < size.repayments) after.push({ kind: 'repayment', delayMs: at() / 4, digit: 0, key: `repayment-${k}` });
      for (let p = k; p < creditPushes; p += population.borrowers.length)
        after.push({ kind: 'stk-push credit', delayMs: at() / 4, digit: pick(PAYER_DIGITS), key: `credit-${p}` });
      const dependents = after.map(() => {
        let settle: (go: boolean) => void = () => {};
        const go = new Promise<boolean>((resolve) => (settle = resolve));
        return { go, settle };
      });
      after.forEach((d, j) =>
        jobs.push(
          run(
            d.kind,
            async () => (await dependents[j]!.go) && (await sleep(d.delayMs), true),
            () =>
              push(
                api,
                b.caller,
                {
                  account: b.credit,
                  credit: true,
                  phone: payer(10_000 + k * 10 + j, d.digit),
                  amount: CREDIT_PUSH,
                  key: d.key,
                },
                ids(scope.transactions),
              ),
          ),
        ),
      );
      jobs.push(
        run('loan + payout', at(), async () => {
          const loan = await takeLoan(
            api,
            b.caller,
            { organizationId: deployment.organizationId, ...LOAN, key: `loan-${k}` },
            ids(scope.loanApplications),
          );
          if (loan.state !== 'final') return loan;
          const payout = await sendMoney(
            api,
            b.caller,
            { account: b.current, phone: b.phone, amount: LOAN.amount, key: `disbursement-${k}` },
            ids(scope.transactions),
          );
          dependents.forEach((d) => d.settle(payout.state === 'final'));
          return { state: payout.state, outcome: `${loan.outcome}, payout ${payout.outcome}` };
        }).finally(() => dependents.forEach((d) => d.settle(false))),
      );
    });

    console.log(
      `\nWorker crash suite${options.bounded ? ' (bounded)' : ''}: ${operations.length} operations over ` +
        `${size.spreadMs / 1000} s, ${size.workers} workers, ${size.kills} SIGKILLs (seed ${size.seed}); ` +
        `deployment up in ${((up - began) / 1000).toFixed(0)} s, population seeded in ${((ready - up) / 1000).toFixed(0)} s`,
    );
    const kills = killWorkers(deployment, size);
    await Promise.all(jobs);
    const killed = await kills;
    const settledSeconds = (Date.now() - ready) / 1000;

    const report = await checkConsistency(deployment.db, scope);
    const provider = await reconcileWithProvider(deployment.db, deployment.simulators.mobileMoney);
    const loansOff = (await inconsistentLoans(deployment.db)).length;

    console.log(`  settled ${settledSeconds.toFixed(0)} s after the first request; per kind:`);
    const count = (kind: Kind, state: Operation['state']) =>
      operations.filter((o) => o.kind === kind && o.state === state).length;
    for (const kind of KINDS) {
      const mine = operations.filter((o) => o.kind === kind);
      if (mine.length === 0) continue;
      const outcomes = new Map<string, number>();
      for (const o of mine) outcomes.set(o.outcome, (outcomes.get(o.outcome) ?? 0) + 1);
      console.log(
        `  ${kind.padEnd(17)} started ${String(count(kind, 'final') + count(kind, 'lost')).padStart(4)}  ` +
          `completed ${String(count(kind, 'final')).padStart(4)}  lost ${count(kind, 'lost')}  ` +
          `refused ${count(kind, 'refused')}  not started ${count(kind, 'not started')}  ` +
          `longest ${Math.max(...mine.map((o) => o.seconds)).toFixed(0)} s  | ` +
          [...outcomes].map(([o, n]) => `${o || '(none)'} ${n}`).join(', '),
      );
    }
    const all = (state: Operation['state']) => operations.filter((o) => o.state === state).length;
    const figures: Figure[] = [
      { name: 'started', value: all('final') + all('lost') },
      { name: 'completed', value: all('final') },
      {
        name: 'lost',
        value: all('lost'),
        expectZero: true,
        detail: operations
          .filter((o) => o.state === 'lost')
          .map((o) => `${o.kind} last seen ${o.outcome} after ${o.seconds.toFixed(0)} s`)
          .join('; '),
      },
      { name: 'refused by the API', value: all('refused'), expectZero: true },
      { name: 'not started (their loan did not complete)', value: all('not started'), expectZero: true },
      { name: "errors of the suite's own client", value: all('error'), expectZero: true },
      { name: 'not final in Postgres', value: report.notFinal, expectZero: true },
      { name: 'double postings', value: report.doublePostings, expectZero: true },
      {
        name: 'payouts or disbursements sent twice at the simulator',
        value: provider.payoutsSentTwice,
        expectZero: true,
      },
      { name: 'push prompts sent twice at the simulator', value: provider.pushesSentTwice, expectZero: true },
      {
        name: 'provider and ledger disagree (paid there, posted here)',
        value: provider.disagreements.length,
        expectZero: true,
      },
      { name: 'callbacks the simulator could not deliver', value: provider.undeliveredCallbacks },
      { name: 'holds left behind', value: report.holdsLeft, expectZero: true },
      { name: 'postings not matching their transaction', value: report.postingsNotMatching, expectZero: true },
      { name: 'allocations not matching payments', value: report.allocationsNotMatching, expectZero: true },
      { name: 'loans whose ledger and schedule disagree', value: loansOff, expectZero: true },
      { name: 'ledger total', value: report.ledgerTotal, expectZero: true },
      { name: 'workers SIGKILLed', value: killed },
      { name: 'worker processes started', value: deployment.workers.started },
      ...(await webhooks.figures(WEBHOOK_WAIT_MS)),
      ...replayFigures(await replayEveryHistory(deployment.temporal)),
    ];
    const ok = printFigures('  figures:', figures);
    const retries = [...api.retries].map(([why, n]) => `${why} ×${n}`);
    console.log(`  keyed requests the client sent again: ${retries.length > 0 ? retries.join(', ') : 'none'}`);
    for (const line of provider.disagreements.slice(0, 10)) console.log(`    disagree: ${line}`);
    if (report.notFinal > 0)
      for (const line of await describeInFlight(deployment.db, scope.transactions))
        console.log(`    in flight: ${line}`);
    console.log(`  wall time ${((Date.now() - began) / 1000).toFixed(0)} s`);
    return ok;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/**
 * Who the operations come from, written straight to Postgres before anything is timed (as the
 * bench seeds do): depositors (three pushes each, their registered number's last digit their
 * push outcome), senders (funded, two payouts each), borrowers (KYC approved, money for the
 * collateral, their own number paid out to), KYC applicants (no application yet), and customers
 * whose current account awaits activation (a provisioned KYC subject each).
 */
async function seedPopulation(deployment: ChaosDeployment, size: Sizes) {
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

/**
 * SIGKILLs a random live worker at each of `kills` random moments within the spread, and starts
 * a new one in its slot at once (in the background: the next kill may come while it starts).
 * Resolves, once every replacement polls, with the number of kills.
 */
async function killWorkers(deployment: ChaosDeployment, size: Sizes): Promise<number> {
  const next = seeded(size.seed + 1);
  const moments = Array.from({ length: size.kills }, () => next() * size.spreadMs).sort((a, b) => a - b);
  const live = new Set(Array.from({ length: deployment.workers.size }, (_, slot) => slot));
  const restarts: Promise<void>[] = [];
  const failures: unknown[] = [];
  const started = Date.now();
  let kills = 0;
  for (const moment of moments) {
    await sleep(started + moment - Date.now());
    while (live.size === 0 && failures.length === 0) await sleep(200);
    if (failures.length > 0) break;
    const slot = [...live][below(next, live.size)]!;
    live.delete(slot);
    await deployment.workers.kill(slot);
    kills++;
    restarts.push(
      deployment.workers.start(slot).then(
        () => void live.add(slot),
        (error: unknown) => void failures.push(error),
      ),
    );
  }
  await Promise.all(restarts);
  if (failures.length > 0) throw failures[0];
  return kills;
}

if (require.main === module) {
  runWorkerCrash(suiteOptionsOf(process.argv)).then(
    (ok) => process.exit(ok ? 0 : 1),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

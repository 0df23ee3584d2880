import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import { loadDevConfig } from '../dev/config';
import { inconsistentLoans } from '../db/loans/servicing-reads';
import { DEMO } from '../db/seeds/demo';
import { mobileMoneySettings, startDevelopmentProviders } from '../dev/simulators';
import { requestToken } from '../simulators/identity';
import { workflowIds } from '../workflows/ids';
import { benchDatabase, demoDatabase } from './database';
import { BENCH_LOAN, seedBorrowers, takeBenchLoans } from './seed';
import { startDeployed } from './deployed';
import {
  closedLoop,
  cpuDuring,
  line,
  type Loop,
  mapBounded,
  pidsMatching,
  poster,
  startServer,
  stopProcess,
} from './lib';

/**
 * Repayments end to end, with the service as deployed (API and worker each in its own process,
 * the mobile-money simulator in a third calling back at once, Postgres, a Temporal dev server):
 * a push of KES 10 on a borrower's credit account, from the API call to POSTED (the stk-push
 * run's result) and allocated (its loan_transactions row written), per second,
 * against pushes on the borrowers' current accounts to POSTED in the same run, in alternating
 * rounds at the same concurrency. Goal: at least 0.9. Each of BORROWERS borrowers has an ACTIVE
 * loan taken through the API (offer, then apply); nothing falls due (a schedule day is a day).
 *
 * Allocation is awaited through LISTEN/NOTIFY: a trigger this benchmark adds to its own database
 * notifies each loan_transactions insert (one listening connection, no polling load on Postgres;
 * the notification costs the allocating transaction a little at commit). A waiter that hears
 * nothing for a second reads the row itself.
 * BENCH_QUICK=1: shorter and fewer rounds (a smoke run; its figures are not the goal's).
 */
const QUICK = Boolean(process.env.BENCH_QUICK);
const CONCURRENCY = 16;
const SECONDS = QUICK ? 3 : 8;
const ROUNDS = QUICK ? 1 : 3;
const BORROWERS = 64;
const AMOUNT = 1_000; // KES 10.00
const GOAL = 0.9;
const TASK_QUEUE = 'bench-repayments';
const ORG = DEMO.organizations.demo.id;
const CHANNEL = 'bench_loan_transactions';

export async function repaymentsBench(): Promise<number> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const base = loadDevConfig({ ...process.env, LOG_LEVEL: 'info' });
    const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
    const simulator = await startServer<{ url: string; certificate: string }>('simulator.ts', {
      BENCH_SIMULATOR: 'mobile-money',
    });
    cleanups.push(() => stopProcess(simulator.child));
    const mobileMoney = mobileMoneySettings(simulator.info.url, simulator.info.certificate);
    const dev = await startDevelopmentProviders({ ...base, ...mobileMoney });
    cleanups.push(() => dev.close());
    const config = dev.config;
    const db = await demoDatabase(databaseUrl, dev.seedOptions, cleanups);

    const borrowers = await seedRepaymentBorrowers(db);

    const { client, temporalAddress, apiUrl, api, worker } = await startDeployed({
      databaseUrl,
      config,
      cliPath: base.TEMPORAL_CLI_PATH,
      taskQueue: TASK_QUEUE,
      providerEnv: mobileMoney,
      cleanups,
    });
    const tokens = await mapBounded(borrowers, (b) =>
      requestToken(dev.idp.url, 'backend', { sub: b.id, aud: config.AUTH_AUDIENCE }),
    );
    const call = poster(apiUrl, tokens);

    await takeBenchLoans(call, client, ORG, BORROWERS);
    const activeLoans = async () =>
      Number(
        (
          await db('loans')
            .whereIn(
              'account_id',
              borrowers.map((b) => b.credit),
            )
            .where({ status: 'ACTIVE' })
            .count<{ count: string }[]>('id as count')
        )[0]!.count,
      );
    if ((await activeLoans()) !== BORROWERS) throw new Error('not every borrower has an ACTIVE loan');

    const allocated = await listenForAllocations(databaseUrl, db, cleanups);

    let firstError: unknown;
    const noted = (op: (i: number) => Promise<void>) => async (i: number) => {
      try {
        await op(i);
      } catch (error) {
        firstError ??= error;
        throw error;
      }
    };
    const push = async (i: number, account: 'current' | 'credit') => {
      const b = borrowers[i]!;
      const { id } = (await call(
        i,
        '/v1/transactions/mobilemoney/stk-push',
        {
          account_id: b[account],
          amount: { value: AMOUNT, currency: 'KES' },
          mobile_number: account === 'current' ? b.phone : b.payer,
        },
        201,
      )) as { id: string };
      const result = (await client.workflow.getHandle(workflowIds.stkPush(id)).result()) as { status: string };
      if (result.status !== 'POSTED') throw new Error(`push ended ${result.status}`);
      return id;
    };
    /** Milliseconds from the stk-push run's result (POSTED) to the allocation heard, per repayment. */
    let afterPosted: number[] = [];
    const currentPush = noted(async (i) => void (await push(i % BORROWERS, 'current')));
    const repayment = noted(async (i) => {
      const id = await push(i % BORROWERS, 'credit');
      const posted = performance.now();
      await allocated(id);
      afterPosted.push(performance.now() - posted);
    });

    for (const op of [currentPush, repayment]) await closedLoop(CONCURRENCY, QUICK ? 1 : 2, op); // warm up
    const temporalPort = temporalAddress.split(':').at(-1)!;
    const processes = {
      'Temporal server': () => pidsMatching(`--port ${temporalPort}`),
      Postgres: () => pidsMatching('postgres'),
      API: () => [api.pid!],
      worker: () => [worker.pid!],
      simulator: () => pidsMatching('servers/simulator.ts'),
      'load generator': () => [process.pid],
    };
    type Measured = Loop & { cpu: Record<string, number>; lag?: number[] };
    const measured = async (op: (i: number) => Promise<void>): Promise<Measured> => {
      afterPosted = [];
      const { result, cpu } = await cpuDuring(processes, () => closedLoop(CONCURRENCY, SECONDS, op));
      return { ...result, cpu, lag: afterPosted };
    };
    const rounds: { base: Measured; cand: Measured }[] = [];
    for (let r = 0; r < ROUNDS; r++)
      rounds.push({ base: await measured(currentPush), cand: await measured(repayment) });
    const median = (pick: (x: (typeof rounds)[number]) => Measured) =>
      [...rounds].map(pick).sort((a, b) => a.perSecond - b.perSecond)[Math.floor(rounds.length / 2)]!;
    const b = median((x) => x.base);
    const c = median((x) => x.cand);
    const ratio = c.perSecond / b.perSecond;
    console.log(
      `\nRepayments: STK push on a credit account to POSTED and allocated vs a push on a current account to POSTED  (${CONCURRENCY} in flight, ${ROUNDS} x ${SECONDS}s alternating rounds, medians)${QUICK ? '  [BENCH_QUICK: a smoke run]' : ''}`,
    );
    console.log(line('baseline   push on the current account to POSTED', b, 'pushes'));
    console.log(line('candidate  push on the credit account to POSTED and allocated', c, 'repayments'));
    console.log(`  ratio ${ratio.toFixed(2)} (goal at least ${GOAL}) ${ratio >= GOAL ? 'met' : 'NOT met'}`);
    const lag = [...(c.lag ?? [])].sort((x, y) => x - y);
    const at = (p: number) => lag[Math.min(lag.length - 1, Math.floor(lag.length * p))] ?? NaN;
    console.log(
      `  of a repayment's time, from the POSTED result to the allocation heard (0: heard first): p50 ${at(0.5).toFixed(0)} ms  p99 ${at(0.99).toFixed(0)} ms`,
    );
    const perOp = (m: Measured, name: string) => (m.cpu[name]! * 1000) / (m.perSecond * SECONDS);
    console.log(
      `  CPU per push / repayment (ms): ${Object.keys(processes)
        .map((name) => `${name} ${perOp(b, name).toFixed(1)} / ${perOp(c, name).toFixed(1)}`)
        .join(', ')}`,
    );
    if (b.errors + c.errors > 0)
      console.log(`  warning: some pushes failed; the ratio is not trustworthy (first: ${String(firstError)})`);

    await printChecks(db, activeLoans);
    return ratio;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

type Borrower = { id: string; current: string; credit: string; phone: string; payer: string };

/**
 * Borrowers: KYC approved, a registered phone (last digit 0: the simulator's "paid"), a current
 * account with money for collateral, a credit account; repayments come from another number of
 * theirs (any payer may repay). And the trigger that notifies every servicing event written.
 */
async function seedRepaymentBorrowers(db: Knex): Promise<Borrower[]> {
  const borrowers = Array.from({ length: BORROWERS }, (_, i) => ({
    id: randomUUID(),
    current: randomUUID(),
    credit: randomUUID(),
    phone: `+25471${String(i).padStart(6, '0')}0`,
    payer: `+25473${String(i).padStart(6, '0')}0`,
  }));
  await seedBorrowers(db, ORG, borrowers, BENCH_LOAN.deposit);
  // Every servicing event written is notified (the benchmark's own database only).
  await db.raw(`create function bench_notify_loan_transaction() returns trigger language plpgsql as $$
    begin perform pg_notify('${CHANNEL}', new.id::text); return null; end $$`);
  await db.raw(`create trigger bench_notify_loan_transaction after insert on loan_transactions
    for each row execute function bench_notify_loan_transaction()`);
  return borrowers;
}

/**
 * Allocation, awaited: LISTEN for the events written; a waiter that hears nothing for a second
 * reads the row itself. Answers the function that resolves once repayment `id` is allocated.
 */
async function listenForAllocations(
  databaseUrl: string,
  db: Knex,
  cleanups: (() => Promise<unknown>)[],
): Promise<(id: string) => Promise<void>> {
  const listener = new pg.Client({ connectionString: databaseUrl });
  listener.on('error', () => {}); // closed at shutdown
  await listener.connect();
  cleanups.push(() => listener.end());
  const heard = new Set<string>();
  const waiters = new Map<string, () => void>();
  listener.on('notification', (message) => {
    const id = message.payload ?? '';
    const waiter = waiters.get(id);
    if (waiter) waiter();
    else heard.add(id);
  });
  await listener.query(`listen ${CHANNEL}`);
  const allocated = (id: string) =>
    new Promise<void>((resolve, reject) => {
      if (heard.delete(id)) return resolve();
      const started = Date.now();
      const done = () => {
        clearInterval(check);
        waiters.delete(id);
        resolve();
      };
      const fail = (error: Error) => {
        clearInterval(check);
        waiters.delete(id);
        reject(error);
      };
      const check = setInterval(() => {
        void db('loan_transactions')
          .where({ id })
          .first('id')
          .then((row) => {
            if (row) done();
            else if (Date.now() - started > 60_000) fail(new Error(`repayment ${id} not allocated within 60 s`));
          }, fail);
      }, 1_000);
      waiters.set(id, done);
    });
  return allocated;
}

/**
 * What the service wrote: every posted repayment allocated, the loans still ACTIVE, the ledger
 * consistent with the schedules.
 */
async function printChecks(db: Knex, activeLoans: () => Promise<number>): Promise<void> {
  const { rows } = await db.raw<{ rows: { posted: string; allocated: string }[] }>(
    `select count(*) as posted, count(e.id) as allocated
       from transactions t join accounts a on a.id = t.account_id and a.type = 'CREDIT'
       left join loan_transactions e on e.transaction_id = t.id
      where t.status = 'POSTED'`,
  );
  const mismatches = await inconsistentLoans(db);
  console.log(
    `  checked: ${rows[0]!.allocated} of ${rows[0]!.posted} posted repayments allocated; ${await activeLoans()} of ${BORROWERS} loans ACTIVE; ${mismatches.length} loans whose ledger differs from the schedule`,
  );
}

if (require.main === module) {
  repaymentsBench().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

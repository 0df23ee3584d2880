import { randomUUID } from 'node:crypto';
import { workflowIds } from '../workflows/ids';
import { startChaosDeployment } from './chaos/deployment';
import { closedLoop, line, type Loop, mapBounded, openLoop } from './lib';
import { seedBorrowers } from './seed';

/**
 * `npm run bench:topologies` (issue 32): STK pushes, API call to POSTED (the run's result read
 * through Temporal), on the two shapes the service runs in, one after the other in one process:
 * the development shape (a Temporal dev server on SQLite, one API, one worker) and the production
 * topology (the Temporal server on PostgreSQL, two API instances behind the round-robin proxy, two
 * workers; bench/chaos/deployment.ts). For each: pushes a second with 16 in flight (its
 * throughput on this machine) and p50/p99 at a fixed 10 and 20 pushes a second.
 */
const CONCURRENCY = 16;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CUSTOMERS = 64;
const RATES = [10, 20];

async function measure(cluster: boolean): Promise<{ closed: Loop; fixed: Loop[] }> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const deployment = await startChaosDeployment({
      workers: 1,
      taskQueue: 'bench-topologies',
      cluster,
      // The prompt's callback at once; only a lost one would wait this long.
      env: { STK_PUSH_CALLBACK_WAIT: '20s' },
      cleanups,
    });
    const customers = Array.from({ length: CUSTOMERS }, (_, i) => ({
      id: randomUUID(),
      current: randomUUID(),
      credit: randomUUID(),
      phone: `+25471${String(i).padStart(6, '0')}0`, // last digit 0: the simulator's "paid"
    }));
    await seedBorrowers(deployment.db, deployment.organizationId, customers, 0);
    const tokens = await mapBounded(customers, (c) => deployment.token(c.id));
    const pushToPosted = async (i: number) => {
      const c = customers[i % CUSTOMERS]!;
      const response = await fetch(`${deployment.apiUrl}/v1/transactions/mobilemoney/stk-push`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens[i % CUSTOMERS]}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify({
          account_id: c.current,
          amount: { value: 10_000, currency: 'KES' },
          mobile_number: c.phone,
        }),
      });
      const body = (await response.json()) as { id: string };
      if (response.status !== 201) throw new Error(`stk-push answered ${response.status}`);
      const result = (await deployment.temporal.workflow.getHandle(workflowIds.stkPush(body.id)).result()) as {
        status: string;
      };
      if (result.status !== 'POSTED') throw new Error(`push ended ${result.status}`);
    };
    await closedLoop(CONCURRENCY, 3, pushToPosted); // warm up
    const closed = await closedLoop(CONCURRENCY, SECONDS, pushToPosted);
    const fixed: Loop[] = [];
    for (const rate of RATES) fixed.push(await openLoop(rate, SECONDS, pushToPosted));
    return { closed, fixed };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

async function main() {
  const shapes = [
    { name: 'dev server (SQLite), 1 API, 1 worker', cluster: false },
    { name: 'Temporal on PostgreSQL, 2 APIs + proxy, 2 workers', cluster: true },
  ];
  console.log(`\nSTK push, API call to POSTED, on each topology (${SECONDS} s a measurement)`);
  for (const shape of shapes) {
    const { closed, fixed } = await measure(shape.cluster);
    console.log(shape.name);
    console.log(line(`  ${CONCURRENCY} in flight`, closed, 'pushes'));
    fixed.forEach((m, i) => console.log(line(`  at a fixed ${RATES[i]} pushes/s`, m, 'pushes')));
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

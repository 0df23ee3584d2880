import { randomUUID } from 'node:crypto';
import { insertEndpoint } from '../db/webhooks/endpoints';
import { newSecret } from '../providers/webhooks/signature';
import {
  type RecordedDelivery,
  type RunningWebhookReceiver,
  startWebhookReceiver,
} from '../simulators/webhook-receiver';
import { workflowIds } from '../workflows/ids';
import { DEMO } from '../db/seeds/demo';
import { type ChaosDeployment, startChaosDeployment } from './chaos/deployment';
import { startHostileTenant } from './chaos/hostile-tenant';
import { ownProcesses } from './chaos/load-processes';
import { cpuDuring, line, type Loop, mapBounded, openLoop, pidsMatching } from './lib';
import { seedBorrowers } from './seed';

/**
 * `npm run bench:webhooks` (issue 33): from a state change committed to its delivery verified at
 * the receiver. STK pushes at a fixed rate on the deployment shape (API, worker, simulators, each
 * a process; the receiver simulator, verifying with standardwebhooks, in this one), first with no
 * endpoint (the same path without delivery: API call to POSTED), then with one subscribed to
 * transaction.posted: API call to POSTED, API call to the delivery verified, and the event's
 * timestamp (its commit) to the delivery verified; then the same again beside a hostile tenant
 * (issue 54: another organization's 16 endpoints at a receiver that never answers, each given
 * BENCH_HOSTILE_EVENTS events), its commit-to-delivered p99 against the one alone (goal: within
 * 2x). BENCH_SECONDS (20), BENCH_RATE (10/s).
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const RATE = Number(process.env.BENCH_RATE ?? 10);
const CUSTOMERS = 64;
/** The hostile tenant: WEBHOOK_ENDPOINTS_MAX endpoints, and events enough for the organization's resend budget (2,000). */
const HOSTILE_ENDPOINTS = 16;
const HOSTILE_EVENTS = Number(process.env.BENCH_HOSTILE_EVENTS ?? 125);

const percentiles = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
};

type CpuGroups = Record<string, () => number[]>;
/** Pushes and the timing of their deliveries; the two lists are cleared between the phases. */
interface Deliveries {
  /** One push, from the API call to its delivery verified at the receiver (ms). */
  pushAndDeliver(i: number): Promise<number>;
  /** Per delivery: its event's timestamp (the commit) to the delivery verified, ms. */
  commitToDelivered: number[];
  /** Per delivery: the API call to the transaction's posted_at, ms. */
  callToPosted: number[];
}

async function main() {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const deployment = await startChaosDeployment({
      workers: 1,
      taskQueue: 'bench-webhooks',
      // BENCH_CLUSTER=1: the production topology (Temporal on PostgreSQL, two APIs behind the proxy, two workers).
      cluster: process.env.BENCH_CLUSTER === '1',
      env: { STK_PUSH_CALLBACK_WAIT: '20s' },
      cleanups,
    });
    const receiver = await startWebhookReceiver();
    cleanups.push(() => receiver.close());
    const arrivals = new Map<string, (delivery: RecordedDelivery) => void>();
    receiver.onDelivery((delivery) => {
      const id = (delivery.body as { data?: { id?: string } } | null)?.data?.id;
      if (id && delivery.verified) arrivals.get(id)?.(delivery);
    });
    const { push, posted } = await stkPushes(deployment);

    // The same path without delivery: no endpoint, so no delivery run (the event is still written).
    await openLoop(RATE, 3, async (i) => posted(await push(i))); // warm up
    const without = await openLoop(RATE, SECONDS, async (i) => posted(await push(i)));

    const endpointId = await subscribe(deployment, receiver);
    const deliveries = timedDeliveries(push, arrivals);
    await openLoop(RATE, 3, async (i) => void (await deliveries.pushAndDeliver(i + 1_000_000))); // warm up
    deliveries.commitToDelivered.length = 0;
    deliveries.callToPosted.length = 0;
    const cpuGroups: CpuGroups = {
      API: () => ownProcesses('api/server.ts'),
      worker: () => ownProcesses('worker/main.ts'),
      Postgres: () => pidsMatching(` ${new URL(deployment.databaseUrl).pathname.slice(1)} `),
      'Temporal server': () => [...ownProcesses('start-dev'), ...ownProcesses('temporal-server')],
    };
    const alone = await cpuDuring(cpuGroups, () =>
      openLoop(RATE, SECONDS, async (i) => void (await deliveries.pushAndDeliver(i))),
    );
    const withDelivery: Loop = alone.result;

    const commit = percentiles(deliveries.commitToDelivered);
    const posting = percentiles(deliveries.callToPosted);
    const hostile = await besideHostileTenant(deployment, endpointId, deliveries, cpuGroups, cleanups);

    console.log(`\nWebhooks: STK pushes at a fixed ${RATE}/s for ${SECONDS} s, deployment shape (1 API, 1 worker)`);
    console.log(line('API call to POSTED, no endpoint (the path without delivery)', without, 'pushes'));
    console.log(line('API call to the delivery verified at the receiver', withDelivery, 'pushes'));
    console.log(
      `  ${'API call to POSTED (posted_at), with the endpoint'.padEnd(58)}        p50 ${posting.p50.toFixed(0)} ms  p99 ${posting.p99.toFixed(0)} ms`,
    );
    console.log(
      `  ${'commit (event timestamp) to the delivery verified'.padEnd(58)}        p50 ${commit.p50.toFixed(0)} ms  p99 ${commit.p99.toFixed(0)} ms`,
    );
    console.log(
      `  delivered p50 / POSTED p50 without delivery: ${(withDelivery.p50 / without.p50).toFixed(2)}; ` +
        `p99: ${(withDelivery.p99 / without.p99).toFixed(2)}`,
    );
    printBeside(hostile, { cpu: alone.cpu, commit });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** CUSTOMERS customers with a funded current account each, and how to push to one and wait for POSTED. */
async function stkPushes(deployment: ChaosDeployment) {
  const customers = Array.from({ length: CUSTOMERS }, (_, i) => ({
    id: randomUUID(),
    current: randomUUID(),
    credit: randomUUID(),
    phone: `+25471${String(i).padStart(6, '0')}0`, // last digit 0: the simulator's "paid"
  }));
  await seedBorrowers(deployment.db, deployment.organizationId, customers, 0);
  const tokens = await mapBounded(customers, (c) => deployment.token(c.id));
  const push = async (i: number): Promise<string> => {
    const c = customers[i % CUSTOMERS]!;
    const response = await fetch(`${deployment.apiUrl}/v1/transactions/mobilemoney/stk-push`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[i % CUSTOMERS]}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        account_id: c.current,
        amount: { value: 10_000, currency: 'KES' },
        mobile_number: c.phone,
      }),
    });
    const body = (await response.json()) as { id: string };
    if (response.status !== 201) throw new Error(`stk-push answered ${response.status}`);
    return body.id;
  };
  const posted = async (id: string) => {
    const result = (await deployment.temporal.workflow.getHandle(workflowIds.stkPush(id)).result()) as {
      status: string;
    };
    if (result.status !== 'POSTED') throw new Error(`push ended ${result.status}`);
  };
  return { push, posted };
}

/** An endpoint of the organization subscribed to transaction.posted at the receiver; answers its id. */
async function subscribe(deployment: ChaosDeployment, receiver: RunningWebhookReceiver): Promise<string> {
  const endpoint = await insertEndpoint(
    deployment.db,
    deployment.organizationId,
    {
      id: randomUUID(),
      url: `${receiver.url}/webhooks/bench`,
      description: 'bench',
      event_types: ['transaction.posted'],
      enabled: true,
      secret: newSecret(),
    },
    Number.MAX_SAFE_INTEGER,
  );
  receiver.register('bench', [endpoint!.secret]);
  return endpoint!.id;
}

/** Where a delivery's time went since `since`: commit to dispatched, to its run started, to its attempt. */
async function stagesSince(deployment: ChaosDeployment, endpointId: string, since: Date): Promise<string> {
  const { rows } = await deployment.db.raw<{
    rows: { dispatched: number; started: number; attempted: number }[];
  }>(
    `select extract(epoch from e.dispatched_at - e.occurred_at) * 1000 as dispatched,
            extract(epoch from d.workflow_started_at - e.occurred_at) * 1000 as started,
            extract(epoch from a.attempted_at - e.occurred_at) * 1000 as attempted
       from webhook_events e join webhook_deliveries d on d.event_id = e.id
       join webhook_attempts a on a.delivery_id = d.id
      where e.organization_id = ? and d.endpoint_id = ? and e.occurred_at > ?`,
    [deployment.organizationId, endpointId, since],
  );
  const stage = (name: 'dispatched' | 'started' | 'attempted') => {
    const at = percentiles(rows.map((r) => Number(r[name])));
    return `${name} p50 ${at.p50.toFixed(0)} p99 ${at.p99.toFixed(0)} ms`;
  };
  return `${stage('dispatched')}; ${stage('started')}; ${stage('attempted')}`;
}

/** Pushes whose delivery is awaited at the receiver (`arrivals` by transaction id), timed. */
function timedDeliveries(
  push: (i: number) => Promise<string>,
  arrivals: Map<string, (delivery: RecordedDelivery) => void>,
): Deliveries {
  const commitToDelivered: number[] = [];
  const callToPosted: number[] = [];
  const pushAndDeliver = async (i: number) => {
    const started = performance.now();
    const at = Date.now();
    let id = '';
    const arrived = new Promise<RecordedDelivery>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no delivery within 60 s')), 60_000);
      void push(i).then((pushed) => {
        id = pushed;
        arrivals.set(id, (delivery) => {
          clearTimeout(timer);
          resolve(delivery);
        });
      }, reject);
    });
    const delivery = await arrived;
    arrivals.delete(id);
    const event = delivery.body as { timestamp: string; data: { posted_at: string } };
    commitToDelivered.push(Date.parse(delivery.receivedAt) - Date.parse(event.timestamp));
    callToPosted.push(Date.parse(event.data.posted_at) - at);
    return performance.now() - started;
  };
  return { pushAndDeliver, commitToDelivered, callToPosted };
}

/**
 * Issue 54: the same, beside a hostile tenant: the second organization's most endpoints, all at
 * a receiver that never answers, each given HOSTILE_EVENTS events (its resend budget's worth).
 * Its ramp first (the dispatcher starting each endpoint's WEBHOOK_RUNS_PER_ENDPOINT runs, their
 * first attempts turned away), timed apart; then the steady state beside it.
 */
async function besideHostileTenant(
  deployment: ChaosDeployment,
  endpointId: string,
  deliveries: Deliveries,
  cpuGroups: CpuGroups,
  cleanups: (() => Promise<unknown>)[],
) {
  const { pushAndDeliver, commitToDelivered } = deliveries;
  const template = await deployment
    .db('webhook_events')
    .where({ organization_id: deployment.organizationId })
    .first('snapshot');
  const hostile = await startHostileTenant(deployment.db, {
    organizationId: DEMO.organizations.second.id,
    endpoints: HOSTILE_ENDPOINTS,
    eventsPerEndpoint: HOSTILE_EVENTS,
    type: 'transaction.posted',
    snapshot: template.snapshot,
  });
  cleanups.push(() => hostile.close());
  commitToDelivered.length = 0;
  const rampFrom = new Date();
  const ramp = await openLoop(RATE, 5, async (i) => void (await pushAndDeliver(i + 3_000_000)));
  const rampStages = await stagesSince(deployment, endpointId, rampFrom);
  const rampCommit = percentiles(commitToDelivered);
  await hostile.started(60_000, 10_000);
  commitToDelivered.length = 0;
  hostile.mostSinceLast();
  const besideRun = await cpuDuring(cpuGroups, () =>
    openLoop(RATE, SECONDS, async (i) => void (await pushAndDeliver(i + 2_000_000))),
  );
  const beside: Loop = besideRun.result;
  const besideCommit = percentiles(commitToDelivered);
  const hostileMost = hostile.mostSinceLast();
  const stages = await stagesSince(deployment, endpointId, new Date(Date.now() - SECONDS * 1000));
  return { ramp, rampStages, rampCommit, beside, besideCpu: besideRun.cpu, besideCommit, hostileMost, stages };
}

/** What beside the hostile tenant measured, against the delivery alone (its CPU and commit-to-delivered). */
function printBeside(
  h: Awaited<ReturnType<typeof besideHostileTenant>>,
  alone: { cpu: Record<string, number>; commit: { p50: number; p99: number } },
): void {
  console.log(
    `\nBeside a hostile tenant (${HOSTILE_ENDPOINTS} endpoints at a receiver that never answers, ` +
      `${HOSTILE_EVENTS} events each; at most ${h.hostileMost} of its attempts in flight at once):`,
  );
  console.log(
    `  during its first 5 s: commit to the delivery verified p50 ${h.rampCommit.p50.toFixed(0)} ms  ` +
      `p99 ${h.rampCommit.p99.toFixed(0)} ms (${h.ramp.perSecond.toFixed(0)} pushes/s)`,
  );
  console.log(`  from commit: ${h.rampStages}`);
  console.log('  then, its runs started and their first attempts made:');
  console.log(line('API call to the delivery verified at the receiver', h.beside, 'pushes'));
  console.log(
    `  ${'commit (event timestamp) to the delivery verified'.padEnd(58)}        p50 ${h.besideCommit.p50.toFixed(0)} ms  p99 ${h.besideCommit.p99.toFixed(0)} ms`,
  );
  console.log(`  from commit: ${h.stages}`);
  const cpuLine = (cpu: Record<string, number>) =>
    Object.entries(cpu)
      .map(([name, seconds]) => `${name} ${((seconds / SECONDS) * 100).toFixed(0)}`)
      .join(', ');
  console.log(`  CPU, % of one core (2 cores: 200 %), alone: ${cpuLine(alone.cpu)}`);
  console.log(`  CPU beside the hostile tenant: ${cpuLine(h.besideCpu)}`);
  console.log(
    `  commit to delivered beside it / alone: p50 ${(h.besideCommit.p50 / alone.commit.p50).toFixed(2)}, ` +
      `p99 ${(h.besideCommit.p99 / alone.commit.p99).toFixed(2)} (goal: p99 within 2x)`,
  );
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

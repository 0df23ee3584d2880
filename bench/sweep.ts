import { readFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../config';
import { loadDevConfig } from '../dev/config';
import { createDb, type Knex, migrate } from '../db/knex';
import { mobileMoneySettings } from '../dev/simulators';
import { startTemporalDevServer } from '../dev/temporal-server';
import { createKycProviderClient } from '../providers/kyc/client';
import { freePort } from '../test/support/ports';
import type { SweepResult } from '../workflows/kyc/messages';
import { workflowIds } from '../workflows/ids';
import { benchDatabase } from './database';
import { startServer, startService, stopProcess } from './lib';

/**
 * The KYC expiry sweep over pending applications spread over 100 organizations, every one
 * asked at the simulator (a tenth unknown there, a tenth final, the rest still running):
 *   - applications swept per second against bare signed v2 status lookups to the same
 *     simulator from one process (the best of several concurrencies), goal at least 0.5;
 *   - the worker's peak resident memory sweeping 10,000 and 100,000 applications, each in a
 *     fresh worker process, goal: under 50 MB apart.
 * The worker is the production entry point (worker/main.ts) in its own process.
 */
const ORGANIZATIONS = 100;
const KYC = { KYC_PARTNER_ID: '2101', KYC_API_KEY: 'bench-kyc-api-key-not-a-secret' };
const TASK_QUEUE = 'bench-kyc-sweep';
/**
 * The worker's node flags as deployed (docker-compose.yml): a bounded heap, so memory stays flat
 * as work grows, and a larger young generation, which spends less time collecting short-lived
 * garbage (a provider answer per application).
 */
const WORKER_NODE_ARGS = ['--max-old-space-size=384', '--max-semi-space-size=32'];
/** Worker processes sharing the sweep (BENCH_SWEEP_WORKERS; one by default). */
const WORKERS = Number(process.env.BENCH_SWEEP_WORKERS ?? 1);

export async function kycSweepBench(sizes = [10_000, 100_000]): Promise<void> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const base = loadDevConfig({ ...process.env, LOG_LEVEL: 'info' });
    const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
    const db = createDb(databaseUrl, 4);
    cleanups.push(() => db.destroy());
    await migrate(db);
    const temporalServer = await startTemporalDevServer({ cliPath: base.TEMPORAL_CLI_PATH });
    cleanups.push(() => temporalServer.teardown());
    const connection = await Connection.connect({ address: temporalServer.address });
    cleanups.push(() => connection.close());
    const client = new Client({ connection });
    const simulator = await startServer<{ url: string }>('simulator.ts', { ...KYC, BENCH_SIMULATOR: 'kyc' });
    cleanups.push(() => stopProcess(simulator.child));
    const provider = createKycProviderClient({
      baseUrl: simulator.info.url,
      partnerId: KYC.KYC_PARTNER_ID,
      apiKey: KYC.KYC_API_KEY,
    });

    await db('organizations').insert(
      Array.from({ length: ORGANIZATIONS }, (_, o) => ({ id: organization(o), name: `Bench lender ${o}` })),
    );
    console.log(
      `\nKYC expiry sweep: ${ORGANIZATIONS} organizations, ${WORKERS} worker/main.ts process${WORKERS === 1 ? '' : 'es'}, KYC_SWEEP_CONCURRENCY ${base.KYC_SWEEP_CONCURRENCY}, batches of ${base.KYC_SWEEP_BATCH_SIZE}`,
    );
    const peaks: number[] = [];
    for (const size of sizes) {
      const jobs = await populate(db, simulator.info.url, size);
      const baseline = await bareLookups(provider, jobs);
      const run = await sweep({
        db,
        client,
        databaseUrl,
        address: temporalServer.address,
        simulatorUrl: simulator.info.url,
        size,
      });
      peaks.push(run.peakRssMb);
      const ratio = run.perSecond / baseline.perSecond;
      console.log(`  ${size.toLocaleString('en')} applications`);
      console.log(
        `    baseline   bare signed v2 status lookups, one process     ${baseline.perSecond.toFixed(0).padStart(6)} /s  (best at concurrency ${baseline.concurrency})`,
      );
      console.log(
        `    candidate  sweep, applications swept                      ${run.perSecond.toFixed(0).padStart(6)} /s  in ${(run.ms / 1000).toFixed(1)} s`,
      );
      // The goal is set for the 100,000 sweep; a small one is dominated by starting 100 sweeps.
      const verdict =
        size >= 100_000 ? `(goal at least 0.5) ${ratio >= 0.5 ? 'met' : 'NOT met'}` : '(the goal is set for 100,000)';
      console.log(`    ratio ${ratio.toFixed(2)} ${verdict}`);
      console.log(`    counts ${JSON.stringify(run.counts)} ${run.countsExact ? 'exact' : 'NOT as expected'}`);
      console.log(
        `    worker resident memory: peak ${run.peakRssMb.toFixed(0)} MB, after start ${run.startRssMb.toFixed(0)} MB`,
      );
    }
    if (peaks.length === 2) {
      const apart = Math.abs(peaks[1]! - peaks[0]!);
      console.log(
        `  worker peak memory ${sizes[0]!.toLocaleString('en')} vs ${sizes[1]!.toLocaleString('en')}: ${apart.toFixed(0)} MB apart (goal under 50) ${apart < 50 ? 'met' : 'NOT met'}`,
      );
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

const organization = (o: number) => `org-bench-${String(o).padStart(3, '0')}`;

interface Job {
  job_id: string;
  user_id: string;
}

/** `size` pending applications past the submission window, and their jobs at the simulator. */
async function populate(db: Knex, simulatorUrl: string, size: number): Promise<Job[]> {
  await db.raw('truncate kyc_sweep_leases, kyc_callback_events, kyc_documents, kyc_subjects, kyc_applications');
  await db('users').del();
  await fetch(`${simulatorUrl}/_control/reset`, { method: 'POST' });
  await db.raw(
    `insert into users (id, organization_id, email)
       select gen_random_uuid(), 'org-bench-' || lpad((i % ?)::text, 3, '0'), 'applicant' || i || '@bench.test' from generate_series(1, ?) i`,
    [ORGANIZATIONS, size],
  );
  await db.raw(
    `insert into kyc_applications (id, organization_id, user_id, status, channel, api_version, job_id, submitted_at)
       select gen_random_uuid(), organization_id, id, 'ID_VERIFICATION_PENDING', 'server_upload', 'v2', gen_random_uuid(), now() - interval '2 days' from users`,
  );
  const jobs: Job[] = await db('kyc_applications').select('job_id', 'user_id');
  // A tenth unknown at the provider (→ EXPIRED), a tenth final (→ completed), the rest running.
  const known = jobs.flatMap((job, i) =>
    i % 10 === 0 ? [] : [{ ...job, state: i % 10 === 1 ? 'final' : 'processing', outcome: 'approve' }],
  );
  for (let i = 0; i < known.length; i += 5_000) {
    const response = await fetch(`${simulatorUrl}/_control/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobs: known.slice(i, i + 5_000) }),
    });
    if (response.status !== 201) throw new Error(`simulator refused the jobs: ${response.status}`);
  }
  await db.raw('analyze kyc_applications');
  return jobs;
}

/** The simulator's pace for signed v2 status lookups from this one process, best of a few concurrencies. */
async function bareLookups(provider: ReturnType<typeof createKycProviderClient>, jobs: Job[]) {
  let best = { perSecond: 0, concurrency: 0 };
  for (const concurrency of [8, 32, 128]) {
    let next = 0;
    let done = 0;
    const started = performance.now();
    const deadline = started + 4_000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) {
          const job = jobs[next++ % jobs.length]!;
          await provider.jobStatus({ apiVersion: 'v2', jobId: job.job_id, userId: job.user_id });
          done += 1;
        }
      }),
    );
    const perSecond = done / ((performance.now() - started) / 1000);
    if (perSecond > best.perSecond) best = { perSecond, concurrency };
  }
  return best;
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** One sweep of every organization by a fresh worker process; its pace, counts and memory. */
async function sweep(options: {
  db: Knex;
  client: Client;
  databaseUrl: string;
  address: string;
  simulatorUrl: string;
  size: number;
}) {
  const startWorker = async () =>
    startService(
      'worker/main.ts',
      {
        ...KYC,
        DATABASE_URL: options.databaseUrl,
        TEMPORAL_ADDRESS: options.address,
        TEMPORAL_TASK_QUEUE: TASK_QUEUE,
        KYC_PROVIDER_URL: options.simulatorUrl,
        // Not called by the sweep; the worker needs the settings to start.
        ...mobileMoneySettings('http://127.0.0.1:9'),
        WORKER_METRICS_PORT: String(await freePort()),
        // The schedule must not start a sweep of its own during the measurement.
        KYC_EXPIRY_SWEEP_INTERVAL: '6h',
      },
      /worker running/,
      WORKER_NODE_ARGS,
    );
  const workers = await Promise.all(Array.from({ length: WORKERS }, startWorker));
  try {
    // Each worker's own resident memory; the peak of any of them.
    const rss = () => Math.max(...workers.map((w) => rssMb(w.pid!)));
    const startRssMb = rss();
    let peakRssMb = startRssMb;
    const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, rss())), 100);
    const started = performance.now();
    const all = await options.client.workflow.execute('kycExpirySweepAll', {
      taskQueue: TASK_QUEUE,
      workflowId: `bench-sweep-all-${options.size}`,
      args: [{ batchSize: loadConfig().KYC_SWEEP_BATCH_SIZE }],
    });
    if ((all as { started: number }).started !== ORGANIZATIONS)
      throw new Error(`the sweep started ${JSON.stringify(all)} organization sweeps`);
    const results = await Promise.all(
      Array.from(
        { length: ORGANIZATIONS },
        (_, o) =>
          options.client.workflow
            .getHandle(workflowIds.kycExpirySweep(organization(o)))
            .result() as Promise<SweepResult>,
      ),
    );
    const ms = performance.now() - started;
    clearInterval(sampler);
    const counts = results.reduce(
      (sum, r) => ({
        scanned: sum.scanned + r.result.scanned,
        expired: sum.expired + r.result.expired,
        completed: sum.completed + r.result.completed,
        still_pending: sum.still_pending + r.result.still_pending,
        failed: sum.failed + r.result.failed,
      }),
      { scanned: 0, expired: 0, completed: 0, still_pending: 0, failed: 0 },
    );
    const tenth = options.size / 10;
    const countsExact =
      counts.scanned === options.size &&
      counts.expired === tenth &&
      counts.completed === tenth &&
      counts.still_pending === options.size - 2 * tenth &&
      counts.failed === 0;
    return { ms, perSecond: options.size / (ms / 1000), counts, countsExact, peakRssMb, startRssMb };
  } finally {
    await Promise.all(workers.map(stopProcess));
  }
}

if (require.main === module) {
  kycSweepBench(
    process.argv.slice(2).map(Number).filter(Boolean).length ? process.argv.slice(2).map(Number) : undefined,
  ).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

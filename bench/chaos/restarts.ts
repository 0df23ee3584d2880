import { inconsistentLoans } from '../../db/loans/servicing-reads';
import { loadDevConfig } from '../../dev/config';
import { checkConsistency, type Figure, operationsNotFinal, printFigures } from './consistency';
import {
  type PostgresStop,
  type Restartable,
  restartablePostgres,
  restartableTemporal,
  restartableTemporalServer,
  type TemporalStop,
} from './dependencies';
import { type ChaosDeployment, type SuiteOptions, startChaosDeployment, suiteOptionsOf } from './deployment';
import { replayEveryHistory, replayFigures } from './replay';
import { seeded, sleep } from './random';
import {
  instanceReadyAfter,
  listenerAfter,
  outcomeMismatches,
  readyAfter,
  RECOVERY_DEADLINE_MS,
  serverErrors,
} from './restart-checks';
import {
  type Answer,
  type Borrower,
  firstPushThrough,
  type Operation,
  pollReadiness,
  prepareBorrowers,
  type ReadinessPoll,
  steadyFlow,
} from './restart-load';
import { type OutageFigures, outageFigures, printAnswers, printOutages } from './restart-report';

/**
 * The restarts suite (issue 19, item 3): the service as deployed (the API and a worker, each a
 * process of its own, the simulators) on a Postgres and a Temporal dev server of the suite's own,
 * under a steady flow of STK pushes and repayments, while Postgres is stopped (fast shutdown, then
 * an immediate one: crash recovery at its start) and later Temporal (killed; in the full run also
 * stopped gracefully first), each for a while and started again on the same port with its state.
 *
 * For each outage it prints what GET /readyz answered while the dependency was down (503 expected),
 * how long after its return /readyz was 200 again and a new push went through end to end, and what
 * the clients' requests were answered meanwhile (201, or 503 SERVICE_UNAVAILABLE in the error shape
 * with Retry-After; nothing else). Then, once the flow has settled: every accepted push final, no
 * process exited, and the ledger consistent (consistency.ts) with every stored transaction's status
 * the outcome of its run. Seeded (CHAOS_SEED); CHAOS_RESTART_RATE pushes a second,
 * CHAOS_RESTART_DOWN_S seconds down, CHAOS_RESTART_BORROWERS borrowers, CHAOS_RESTART_OUTAGES which.
 *
 * With `cluster` (issue 32) the service runs in the production topology (deployment.ts): the
 * Temporal server is the real one on the suite's Postgres (so a Postgres outage takes Temporal's
 * persistence down too), and one more outage comes first: one of the API instances behind the
 * proxy killed and started again, during which /readyz must stay 200 (the other instance answers)
 * and a push cut by the kill is retried under its key (409 in progress until the dead instance's
 * lock runs out, then finished by the retry).
 */
const TASK_QUEUE = 'chaos-restarts';
/** Every accepted push must be final (and every posted repayment allocated) within this after the flow stops. */
const SETTLE_DEADLINE_MS = 4 * 60_000;

type Outage =
  | { dependency: 'postgres'; how: PostgresStop }
  | { dependency: 'temporal'; how: TemporalStop }
  | { dependency: 'api'; how: 'killed' };

const OUTAGE_NAMES: Record<string, string> = {
  'postgres fast': 'Postgres, fast shutdown',
  'postgres immediate': 'Postgres, immediate (crash)',
  'temporal graceful': 'Temporal, stopped (SIGINT)',
  'temporal killed': 'Temporal, killed (SIGKILL)',
  'api killed': 'One API instance, killed',
};

function sizes(bounded: boolean, cluster: boolean) {
  const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const every: Outage[] = [
    ...(cluster ? [{ dependency: 'api', how: 'killed' } as const] : []),
    { dependency: 'postgres', how: 'fast' },
    { dependency: 'postgres', how: 'immediate' },
    { dependency: 'temporal', how: 'graceful' },
    { dependency: 'temporal', how: 'killed' },
  ];
  // CHAOS_RESTART_OUTAGES picks some, in its order (e.g. "temporal-killed,postgres-fast").
  const chosen = process.env.CHAOS_RESTART_OUTAGES?.split(',').map((name) => {
    const found = every.find((o) => `${o.dependency}-${o.how}` === name.trim());
    if (!found) throw new Error(`CHAOS_RESTART_OUTAGES: no outage ${name}`);
    return found;
  });
  const outages = chosen ?? every.filter((o) => !bounded || o.how !== 'graceful');
  return {
    seed: env('CHAOS_SEED', 20261124),
    rate: env('CHAOS_RESTART_RATE', bounded ? 1 : 3),
    downMs: env('CHAOS_RESTART_DOWN_S', bounded ? 10 : 20) * 1000,
    borrowers: env('CHAOS_RESTART_BORROWERS', bounded ? 6 : 20),
    /** Load before the first outage and between recoveries and the next one. */
    calmMs: bounded ? 3_000 : 15_000,
    outages,
  };
}

export async function runRestarts(options: SuiteOptions): Promise<boolean> {
  const cluster = options.cluster ?? false;
  const size = sizes(options.bounded, cluster);
  const cleanups: (() => Promise<unknown>)[] = [];
  const started = Date.now();
  try {
    const base = loadDevConfig(process.env);
    const postgres = await restartablePostgres(cleanups);
    const temporal = cluster
      ? await restartableTemporalServer(postgres.address, cleanups)
      : await restartableTemporal({ cliPath: base.TEMPORAL_CLI_PATH }, cleanups);
    const deployment = await startChaosDeployment({
      workers: 1,
      taskQueue: TASK_QUEUE,
      adminUrl: postgres.address,
      temporalAddress: temporal.address,
      cluster,
      cleanups,
    });
    const borrowers = await prepareBorrowers(deployment, size.borrowers + 1);
    const prober = borrowers.pop()!;
    const runStart = new Date();
    console.log(
      `restarts: deployed, ${size.borrowers + 1} loans taken, in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );

    const answers: Answer[] = [];
    const readiness = pollReadiness(deployment.apiUrl);
    cleanups.push(() => readiness.stop());
    const flow = steadyFlow({
      apiUrl: deployment.apiUrl,
      borrowers,
      rate: size.rate,
      next: seeded(size.seed),
      answers,
    });
    const probes: Operation[] = [];
    const outages: OutageFigures[] = [];
    for (const outage of size.outages) {
      await sleep(size.calmMs);
      outages.push(
        await takeDown({ postgres, temporal }, outage, size.downMs, {
          deployment,
          prober,
          polls: readiness.polls,
          answers,
          probes,
        }),
      );
    }
    await sleep(size.calmMs);
    flow.stop();
    await flow.done;
    await readiness.stop();

    const operations = [...flow.operations, ...probes];
    const accepted = operations.filter((op) => op.id !== undefined).map((op) => op.id!);
    const settleStart = Date.now();
    while (Date.now() - settleStart < SETTLE_DEADLINE_MS) {
      const open = await operationsNotFinal(deployment.db, { transactions: accepted });
      if (open.transactions + open.repayments === 0) break;
      await sleep(1_000);
    }
    const settledSeconds = (Date.now() - settleStart) / 1000;

    printOutages(outages, answers, size);
    // A request cut by an instance's kill (502), or its key held until the dead one's lock runs
    // out (409: the services run IDEMPOTENCY_LOCK_TIMEOUT as this process reads it).
    const cutWindows = outages
      .filter((o) => o.dependency === 'api')
      .map((o) => ({ from: o.from, to: o.to + base.IDEMPOTENCY_LOCK_TIMEOUT + 10_000 }));
    const answeredFigures = printAnswers(answers, operations, cutWindows);
    const stored = (await deployment.db('transactions').where('transacted_at', '>=', runStart).pluck('id')) as string[];
    const acceptedSet = new Set(accepted);
    const unanswered = stored.filter((id) => !acceptedSet.has(id));
    if (unanswered.length > 0)
      console.log(
        `  stored without a 201 answer: ${(
          await deployment.db('transactions').whereIn('id', unanswered).select('id', 'status', 'created_at')
        )
          .map(
            (t: { id: string; status: string; created_at: Date }) =>
              `${t.id} ${t.status} ${t.created_at.toISOString()}`,
          )
          .join('; ')}`,
      );
    const report = await checkConsistency(deployment.db, { transactions: stored });
    const figures: Figure[] = [
      ...outageFigures(outages),
      ...answeredFigures,
      {
        name: 'API 5xx but 503, any route (/metrics)',
        value: (await serverErrors(deployment.apiInstanceUrls)) + outages.reduce((n, o) => n + o.serverErrorsBefore, 0),
        expectZero: true,
      },
      { name: 'service processes exited', value: deployment.unexpectedExits(), expectZero: true },
      { name: 'transactions stored', value: stored.length },
      {
        name: 'stored without a 201 answer',
        value: unanswered.length,
        expectZero: true,
      },
      { name: 'not final (pushes, repayments)', value: report.notFinal, expectZero: true },
      { name: 'status not its run outcome', value: await outcomeMismatches(deployment, stored), expectZero: true },
      { name: 'double postings', value: report.doublePostings, expectZero: true },
      { name: 'holds left behind', value: report.holdsLeft, expectZero: true },
      { name: 'postings not matching', value: report.postingsNotMatching, expectZero: true },
      { name: 'allocations not matching', value: report.allocationsNotMatching, expectZero: true },
      { name: 'loans: ledger vs schedule', value: (await inconsistentLoans(deployment.db)).length, expectZero: true },
      { name: 'ledger total', value: report.ledgerTotal, expectZero: true },
      ...replayFigures(await replayEveryHistory(deployment.temporal)),
    ];
    return printFigures(
      `Restarts: figures (the flow settled ${settledSeconds.toFixed(0)} s after it stopped)`,
      figures,
    );
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** Takes one dependency down for `downMs` while the flow runs, brings it back, and measures the recovery. */
async function takeDown(
  dependencies: { postgres: Restartable<PostgresStop>; temporal: Restartable<TemporalStop> },
  outage: Outage,
  downMs: number,
  watch: {
    deployment: ChaosDeployment;
    prober: Borrower;
    polls: ReadinessPoll[];
    answers: Answer[];
    probes: Operation[];
  },
): Promise<OutageFigures> {
  const { apiUrl, apiInstanceUrls, db } = watch.deployment;
  // The instance about to be killed takes its counters with it: its 5xx so far are read first.
  const serverErrorsBefore = outage.dependency === 'api' ? await serverErrors([apiInstanceUrls[0]!]) : 0;
  const stopping = Date.now();
  if (outage.dependency === 'postgres') await dependencies.postgres.down(outage.how);
  else if (outage.dependency === 'temporal') await dependencies.temporal.down(outage.how);
  else await watch.deployment.apis.kill(0);
  const downAt = Date.now();
  await sleep(downMs);
  const upAt = Date.now();
  if (outage.dependency === 'api') await watch.deployment.apis.start(0);
  else await dependencies[outage.dependency].up();
  const backAt = Date.now();
  // An API instance's recovery is its own: its /readyz, and a push through it, not through the proxy.
  const restarted = outage.dependency === 'api' ? apiInstanceUrls[0]! : undefined;
  const [readyAfterMs, pushAfterMs, listenerAfterMs] = await Promise.all([
    restarted ? instanceReadyAfter(restarted, backAt) : readyAfter(watch.polls, backAt),
    firstPushThrough(restarted ?? apiUrl, watch.prober, backAt, RECOVERY_DEADLINE_MS, watch.probes, watch.answers),
    outage.dependency === 'postgres' ? listenerAfter(db, backAt) : undefined,
  ]);
  const whileDown = watch.polls.filter((p) => p.sentAt >= downAt && p.answeredAt <= upAt);
  // A dependency down makes the API unready (503); one API instance down leaves the other ready.
  const expectedStatus = outage.dependency === 'api' ? 200 : 503;
  return {
    name: OUTAGE_NAMES[`${outage.dependency} ${outage.how}`]!,
    dependency: outage.dependency,
    downSeconds: (backAt - stopping) / 1000,
    polls: whileDown.length,
    expectedStatus,
    pollsExpected: whileDown.filter((p) => p.status === expectedStatus).length,
    readyAfterMs,
    pushAfterMs,
    listenerAfterMs,
    serverErrorsBefore,
    from: stopping,
    to: backAt,
  };
}

if (require.main === module) {
  runRestarts(suiteOptionsOf(process.argv)).then(
    (ok) => process.exit(ok ? 0 : 1),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

import { inconsistentLoans } from '../../db/loans/servicing-reads';
import { ApiClient } from './client-flows';
import { type ConsistencyReport, checkConsistency, describeInFlight, type Figure, printFigures } from './consistency';
import { type ChaosDeployment, type SuiteOptions, startChaosDeployment, suiteOptionsOf } from './deployment';
import { replayEveryHistory, replayFigures } from './replay';
import { type ProviderReconciliation, reconcileWithProvider } from './provider-ledger';
import { below, seeded, sleep } from './random';
import { startWebhookAudit } from './webhook-audit';
import { KINDS, type Operation, seedPopulation, type Sizes, sizes, startMix } from './worker-crash-mix';

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
 * CHAOS_DEADLINE_MS (after the spread) 600000/270000; CHAOS_SEED. The sizes, the population and
 * the mix are in ./worker-crash-mix.ts; this module deploys, kills the workers and reports.
 */

type WebhookAudit = Awaited<ReturnType<typeof startWebhookAudit>>;

/** How long the webhook audit waits, once every operation ended, for the last events to arrive. */
const WEBHOOK_WAIT_MS = 60_000;

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
    const population = await seedPopulation(deployment, size);
    /** The mix starts now: every moment below is counted from here. */
    const ready = Date.now();
    const api = new ApiClient(deployment.apiUrl, ready + size.spreadMs + size.deadlineMs);
    const { operations, scope, jobs } = startMix({ api, deployment, size, population });

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
    printKinds(operations);
    const figures = await figuresOf({ operations, report, provider, loansOff, killed, deployment, webhooks });
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

/** A line per kind of operation: started, completed, lost, refused, not started, the longest, and the outcomes. */
function printKinds(operations: Operation[]): void {
  const count = (kind: Operation['kind'], state: Operation['state']) =>
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
}

/**
 * The suite's figures, most of them expected to be 0: the operations by how they ended, the
 * ledger's consistency, the provider against the ledger, the workers, the webhook audit (after
 * waiting for the last events) and the replay of every history.
 */
async function figuresOf(run: {
  operations: Operation[];
  report: ConsistencyReport;
  provider: ProviderReconciliation;
  loansOff: number;
  killed: number;
  deployment: ChaosDeployment;
  webhooks: WebhookAudit;
}): Promise<Figure[]> {
  const { operations, report, provider } = run;
  const all = (state: Operation['state']) => operations.filter((o) => o.state === state).length;
  return [
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
    { name: 'loans whose ledger and schedule disagree', value: run.loansOff, expectZero: true },
    { name: 'ledger total', value: report.ledgerTotal, expectZero: true },
    { name: 'workers SIGKILLed', value: run.killed },
    { name: 'worker processes started', value: run.deployment.workers.started },
    ...(await run.webhooks.figures(WEBHOOK_WAIT_MS)),
    ...replayFigures(await replayEveryHistory(run.deployment.temporal)),
  ];
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

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { type History, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DEMO } from '../../db/seeds/demo';
import { ApiClient } from './client-flows';
import { type Figure, printFigures } from './consistency';
import { startChaosDeployment } from './deployment';
import { activationCodes, emailTokens, phoneChangeCodes, verificationResults } from './handlers-identity';
import { loanServicing, offerAcceptance, payoutResults, pushResults } from './handlers-money';
import { type Check, createWorld, type Prepared, type Scenario } from './handlers-world';
import { replayEveryHistory, replayFigures } from './replay';
import { sleep } from './random';

/**
 * Message handlers under concurrency (issue 28, item 2): for each workflow type with signals or
 * Updates, a run gets n of them at once (n = 2, 5, 20), mixed with its timers (a loan's days are
 * a second long) and with continue-as-new (the suite's dev server suggests it after a few dozen
 * events), and the worker is killed and replaced while they are in flight. Every run must end
 * where some serial order of its messages would have put it, and every history the suite
 * produced must replay against the current workflow code.
 *
 * The workflow types without messages (the schedules' sweeps and purges, repayment
 * reconciliation) are covered by the replay of every history; invoice extraction is not driven
 * here (the deployment has no object store): its re-extraction limit is tested in npm test.
 */
const ALL_SCENARIOS: Scenario[] = [
  loanServicing,
  offerAcceptance,
  pushResults,
  payoutResults,
  activationCodes,
  phoneChangeCodes,
  emailTokens,
  verificationResults,
];

/** CHAOS_HANDLERS_ONLY=type,type… runs only those workflow types' scenarios (to chase one finding). */
const only = process.env.CHAOS_HANDLERS_ONLY?.split(',');
const SCENARIOS = ALL_SCENARIOS.filter((s) => !only || only.includes(s.type));

/** Loans continue as new after this many events: several times over in the suite. */
const CONTINUE_AS_NEW_AFTER = 60;

export async function runHandlerConcurrency(options: { bounded: boolean }): Promise<boolean> {
  // Bounded (CI): one round, a run of each type for each n, all at once, one worker restart.
  // Full: a round per n, twice over, each with its restart.
  const rounds = options.bounded ? [[2, 5, 20]] : [[2], [5], [20], [2], [5], [20]];
  const sizes = rounds.flat();
  const cleanups: (() => Promise<unknown>)[] = [];
  const began = Date.now();
  try {
    const deployment = await startChaosDeployment({
      workers: 1,
      taskQueue: 'chaos-handlers',
      email: true,
      // A loan's days are a second long; a push or payout the worker died before sending gives
      // up within seconds, not the chaos suites' minutes (nothing was collected or paid).
      env: {
        LOAN_DAY_LENGTH: '1s',
        STK_PUSH_CALLBACK_WAIT: '5s',
        STK_PUSH_QUERY_INTERVAL: '2s',
        STK_PUSH_QUERY_DEADLINE: '20s',
        SEND_MONEY_RESULT_WAIT: '30s',
        SEND_MONEY_STATUS_QUERY_AFTER: '5s',
        SEND_MONEY_STATUS_QUERY_INTERVAL: '3s',
      },
      temporalDynamicConfig: { 'limit.historyCount.suggestContinueAsNew': CONTINUE_AS_NEW_AFTER },
      cleanups,
    });
    const api = new ApiClient(deployment.apiUrl, Date.now() + 30 * 60_000);
    const world = createWorld(deployment, api, { token: await deployment.token(DEMO.users.internal.id) });
    const control = (url: string, path: string, body: unknown) =>
      fetch(`${url}/_control${path}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => {
        if (!r.ok) throw new Error(`${url}${path}: ${r.status}`);
      });
    const problems = new Map<string, string[]>(SCENARIOS.map((s) => [s.type, []]));
    for (const [index, round] of rounds.entries()) {
      // Every provider result is delivered n times at once, concurrently (the round's largest n).
      const chaos = { seed: index, burst: Math.max(...round) };
      await control(deployment.simulators.mobileMoney, '/mode', { chaos });
      await control(deployment.simulators.kyc, '/', { chaos });
      const started = Date.now();
      const runs = round.flatMap((n) => SCENARIOS.map((scenario) => ({ n, scenario })));
      const prepared = await Promise.all(
        runs.map(({ scenario }) =>
          scenario.prepare(world).then(
            (p): Prepared | Error => p,
            (e: unknown) => asError(e),
          ),
        ),
      );
      const took = new Map<string, number>();
      const sends = prepared.map((p, i) => {
        const { n, scenario } = runs[i]!;
        const sent = Date.now();
        const done = (check: Check | Error) => (took.set(`${scenario.type} n=${n}`, Date.now() - sent), check);
        return p instanceof Error
          ? Promise.resolve<Check | Error>(p)
          : p.send(n).then(done, (e: unknown) => done(asError(e)));
      });
      // The worker dies while the messages are in flight; a new one replays every run it had.
      await sleep(1_500);
      await deployment.workers.kill(0);
      await deployment.workers.start(0);
      const checks = await Promise.all(sends);
      for (const [i, check] of checks.entries()) {
        const { n, scenario } = runs[i]!;
        const found = check instanceof Error ? [`client: ${check.message}`] : await check();
        problems.get(scenario.type)!.push(...found.map((p) => `n=${n}: ${p}`));
      }
      const slowest = [...took].sort((x, y) => y[1] - x[1]).slice(0, 2);
      console.log(
        `  n=${round.join(', ')}: ${runs.length} runs of ${SCENARIOS.length} workflow types, ` +
          `${((Date.now() - started) / 1000).toFixed(0)} s ` +
          `(slowest: ${slowest.map(([run, ms]) => `${run} ${(ms / 1000).toFixed(0)} s`).join(', ')})`,
      );
    }

    const continued = await deployment.temporal.workflow.count(
      "WorkflowType = 'loan' AND ExecutionStatus = 'ContinuedAsNew'",
    );
    const figures: Figure[] = [
      ...SCENARIOS.map((s) => ({
        name: `${s.type}: not a serial order's end (${s.sends})`,
        value: problems.get(s.type)!.length,
        expectZero: true,
      })),
      { name: 'loan runs continued as new', value: continued.count },
      { name: 'worker restarts', value: rounds.length },
      ...replayFigures(await replayEveryHistory(deployment.temporal)),
    ];
    for (const [type, found] of problems) for (const p of found.slice(0, 5)) console.log(`    ${type}: ${p}`);
    if (process.env.CHAOS_KEEP_HISTORIES) await keepHistories(deployment.temporal, process.env.CHAOS_KEEP_HISTORIES);
    const ok = printFigures(`Handlers under concurrency: n = ${sizes.join(', ')}`, figures);
    console.log(`  wall time ${((Date.now() - began) / 1000).toFixed(0)} s`);
    return ok && continued.count > 0;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** Every history of the suite's server, one JSON file per run under `dir`, to read a finding. */
async function keepHistories(temporal: Client, dir: string) {
  await mkdir(dir, { recursive: true });
  for await (const { workflowId, history } of temporal.workflow.list().intoHistories())
    await writeFile(path.join(dir, `${workflowId.replace(/\//g, '_')}.json`), historyToJSON(history as History));
  console.log(`  histories kept in ${dir}`);
}

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

if (require.main === module) {
  runHandlerConcurrency({ bounded: process.argv.includes('--bounded') }).then(
    (ok) => process.exit(ok ? 0 : 1),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

import { Client, Connection } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { loadConfig } from '../config';
import { createLogger } from '../config/logger';
import { temporalConnectionOptions } from '../config/temporal';
import { bundleWorkflows } from './bundle';
import { installRuntime } from './runtime';

/** A run whose history the bundle does not replay: its ids and the SDK's account (it names the event). */
export interface ReplayFailure {
  workflowId: string;
  runId: string;
  message: string;
}

export interface ReplayReport {
  replayed: number;
  failures: ReplayFailure[];
}

/** How long one history may take to replay before the replay is called stuck. */
const STUCK_AFTER_MS = 60_000;
/** Temporal's EventType values (temporal/api/enums/v1/event_type.proto; wire values, stable). */
const WORKFLOW_TASK_SCHEDULED = 5;
const WORKFLOW_TASK_COMPLETED = 7;

/**
 * The part of a history its code has decided: everything up to the workflow task that was
 * scheduled after the last completed one (an open run's pending inputs and its task in flight,
 * if any, are left out). Replaying that last task would run it as new work, which a replayer
 * cannot finish (its activities are not registered); it recorded no commands to compare anyway.
 */
export function decidedPart(history: History): History {
  const events = history.events ?? [];
  const lastCompleted = events.findLastIndex((e) => e.eventType === WORKFLOW_TASK_COMPLETED);
  const next = events.findIndex((e, i) => i > lastCompleted && e.eventType === WORKFLOW_TASK_SCHEDULED);
  return next < 0 || lastCompleted < 0 ? history : { ...history, events: events.slice(0, next) };
}

/**
 * Replays every history a visibility `query` finds (by default every run of the namespace, open
 * and closed, of every workflow type) against `workflowBundle`, and reports the runs that do not
 * replay: a nondeterminism (the code would wedge the run after a worker restart) or a workflow
 * task the code fails. The test run and the chaos suites end with it over everything they
 * produced; before a deployment, `npm run replay` asks it of the histories in flight. A history
 * that takes longer than a minute throws, naming it (a replayer that waits forever helps nobody).
 */
export async function replayHistories(
  client: Client,
  workflowBundle: WorkflowBundle,
  query?: string,
): Promise<ReplayReport> {
  const listed = client.workflow.list(query ? { query } : {}).intoHistories({ concurrency: 8, bufferLimit: 64 });
  let current = '';
  const histories = (async function* () {
    for await (const { workflowId, history } of listed) {
      current = workflowId;
      yield { workflowId, history: decidedPart(history as History) };
    }
  })();
  const report: ReplayReport = { replayed: 0, failures: [] };
  const results = Worker.runReplayHistories({ workflowBundle, replayName: 'replay-histories' }, histories);
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the replay of ${current} did not end in 60 s`)), STUCK_AFTER_MS);
    });
    const next = await Promise.race([results.next(), stuck]).finally(() => clearTimeout(timer));
    if (next.done) break;
    const result = next.value;
    report.replayed += 1;
    if (result.error)
      report.failures.push({
        workflowId: result.workflowId,
        runId: result.runId,
        message: result.error instanceof Error ? result.error.message : String(result.error),
      });
  }
  return report;
}

/** One line per run that did not replay, for a test's or a suite's failure. */
export function describeReplayFailures(report: ReplayReport, limit = 20): string {
  const lines = report.failures
    .slice(0, limit)
    .map((failure) => `${failure.workflowId} (run ${failure.runId}): ${failure.message}`);
  if (report.failures.length > limit) lines.push(`…and ${report.failures.length - limit} more`);
  return lines.join('\n');
}

/**
 * `npm run replay -- [visibility query]`: before deploying new workflow code, replays the
 * namespace's histories (all of them, or those the query finds, e.g. "ExecutionStatus='Running'")
 * against this checkout's workflows; exits 1 naming each run that would not replay.
 */
async function main() {
  const config = loadConfig();
  // The replay worker's start and stop are not news here: warnings and errors only.
  installRuntime({ logger: createLogger('warn') });
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    const report = await replayHistories(client, await bundleWorkflows(), process.argv[2]);
    console.log(`${report.replayed} histories replayed, ${report.failures.length} not replaying`);
    if (report.failures.length > 0) {
      console.log(describeReplayFailures(report, Number.POSITIVE_INFINITY));
      process.exitCode = 1;
    }
  } finally {
    await connection.close();
  }
}

if (require.main === module)
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });

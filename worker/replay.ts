import { Client, Connection } from '@temporalio/client';
import { Worker, type WorkflowBundle } from '@temporalio/worker';
import { loadConfig } from '../config';
import { temporalConnectionOptions } from '../config/temporal';
import { bundleWorkflows } from './bundle';

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

/**
 * Replays every history a visibility `query` finds (by default every run of the namespace, open
 * and closed, of every workflow type) against `workflowBundle`, and reports the runs that do not
 * replay: a nondeterminism (the code would wedge the run after a worker restart) or a workflow
 * task the code fails. The test run and the chaos suites end with it over everything they
 * produced; before a deployment, `npm run replay` asks it of the histories in flight.
 */
export async function replayHistories(
  client: Client,
  workflowBundle: WorkflowBundle,
  query?: string,
): Promise<ReplayReport> {
  const histories = client.workflow.list(query ? { query } : {}).intoHistories({ concurrency: 8, bufferLimit: 64 });
  const report: ReplayReport = { replayed: 0, failures: [] };
  for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: 'replay-histories' }, histories)) {
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

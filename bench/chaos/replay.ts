import type { Client } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/bundle';
import { describeReplayFailures, replayHistories, type ReplayReport } from '../../worker/replay';
import type { Figure } from './consistency';

let bundle: Promise<WorkflowBundle> | undefined;

/**
 * Every workflow history a suite's Temporal server holds (every type, open and closed), replayed
 * against the production workflow bundle (bundled once per process) before the suite's
 * deployment goes: a run the current code cannot replay would wedge at the next worker restart.
 */
export async function replayEveryHistory(temporal: Client): Promise<ReplayReport> {
  bundle ??= bundleWorkflows();
  const report = await replayHistories(temporal, await bundle);
  if (report.failures.length > 0)
    console.log(`  histories that do not replay:\n${describeReplayFailures(report).replace(/^/gm, '    ')}`);
  return report;
}

/** A suite's lines for its replays (one or more deployments' reports). */
export function replayFigures(...reports: ReplayReport[]): Figure[] {
  const sum = (pick: (r: ReplayReport) => number) => reports.reduce((n, r) => n + pick(r), 0);
  return [
    { name: 'workflow histories replayed', value: sum((r) => r.replayed) },
    { name: 'histories that do not replay', value: sum((r) => r.failures.length), expectZero: true },
  ];
}

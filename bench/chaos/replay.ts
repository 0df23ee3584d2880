import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/bundle';
import { describeReplayFailures, replayHistories, type ReplayReport } from '../../worker/replay';
import type { Figure } from './consistency';

/**
 * The suites' production workflow bundle, made once per process: for the replay of every history
 * at each suite's end, and, as a file, for the worker processes the suites start.
 */
let bundle: Promise<WorkflowBundle> | undefined;
let bundleFile: Promise<string> | undefined;

/** The production workflow bundle, bundled once per process. */
const productionBundle = () => (bundle ??= bundleWorkflows());

/**
 * That bundle in a file of this process's own, for the worker processes a suite starts
 * (WORKFLOW_BUNDLE_PATH): a worker killed and started again is polling seconds sooner.
 */
export function workflowBundleFile(): Promise<string> {
  bundleFile ??= productionBundle().then(async ({ code }) => {
    const file = path.join(os.tmpdir(), `chaos-workflow-bundle-${process.pid}.js`);
    await writeFile(file, code);
    process.once('exit', () => rmSync(file, { force: true }));
    return file;
  });
  return bundleFile;
}

/**
 * Every workflow history a suite's Temporal server holds (every type, open and closed), replayed
 * against the production workflow bundle (bundled once per process) before the suite's
 * deployment goes: a run the current code cannot replay would wedge at the next worker restart.
 */
export async function replayEveryHistory(temporal: Client): Promise<ReplayReport> {
  const report = await replayHistories(temporal, await productionBundle());
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

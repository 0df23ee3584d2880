import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { harness } from './harness';

/**
 * With RECORD_HISTORIES=1, saves a finished run's history under test/replay/histories for the replay
 * test. Record a changed workflow under a new name and keep the old file: old histories are
 * what proves a change still replays the runs already in flight.
 */
export async function recordHistory(
  workflowId: string,
  name: string,
  options: { running?: boolean } = {},
): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  const handle = harness().client.workflow.getHandle(workflowId);
  // The run's own end: its last step's effects can be visible before its last task is saved.
  // A run that goes on (a loan with months left) is recorded as far as it got.
  if (!options.running) await handle.result().catch(() => undefined);
  const history = await handle.fetchHistory();
  const dir = path.join(__dirname, '..', 'replay', 'histories');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${name}.json`), historyToJSON(history));
}

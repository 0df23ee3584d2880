import { strict as assert } from 'node:assert';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { createLogger } from '../../config/logger';
import { bundleWorkflows } from '../../worker/bundle';
import { installRuntime } from '../../worker/runtime';
import { harnessRunning, harness } from '../support/harness';

/** Recorded histories (test/support/histories.ts records them with RECORD_HISTORIES=1). */
const HISTORIES = path.join(__dirname, 'histories');

describe('replay: recorded histories still replay against the current workflow code', () => {
  it('replays every history under test/replay/histories without nondeterminism', async function () {
    this.timeout(120_000);
    const files = (await readdir(HISTORIES)).filter((file) => file.endsWith('.json'));
    assert.ok(files.length > 0, 'at least one recorded history');
    // The run's bundle under npm test; a bundle of its own under npm run test:unit (no servers).
    if (!harnessRunning()) installRuntime({ logger: createLogger('silent') });
    const workflowBundle = harnessRunning()
      ? harness().workflowBundle
      : await bundleWorkflows(require.resolve('../fixtures/workflows'));
    for (const file of files) {
      const history = JSON.parse(await readFile(path.join(HISTORIES, file), 'utf8'));
      await Worker.runReplayHistory({ workflowBundle }, history, file);
    }
  });
});

import { describeReplayFailures, replayHistories } from '../worker/replay';
import { harness, harnessRunning, startHarness, stopHarness } from './support/harness';

/**
 * Mocha root hooks: the harness starts once before every suite and is torn down after all.
 * Before it goes, every workflow history the run produced (every type, open and closed) is
 * replayed against the run's workflow bundle: one that does not replay fails the run, naming
 * the workflow id and the event.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(10 * 60_000); // the first run on a new machine builds the Temporal CLI
    await startHarness();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(5 * 60_000);
    try {
      if (!harnessRunning()) return;
      const { client, workflowBundle } = harness();
      const started = Date.now();
      const report = await replayHistories(client, workflowBundle);
      console.log(
        `\n  replayed every workflow history of the run: ${report.replayed} runs, ` +
          `${report.failures.length} not replaying (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
      if (report.failures.length > 0)
        throw new Error(`workflow histories that do not replay:\n${describeReplayFailures(report)}`);
    } finally {
      await stopHarness();
    }
  },
};

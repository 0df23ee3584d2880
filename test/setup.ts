import { startHarness, stopHarness } from './support/harness';

/** Mocha root hooks: the harness starts once before every suite and is torn down after all. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(10 * 60_000); // the first run on a new machine builds the Temporal CLI
    await startHarness();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopHarness();
  },
};

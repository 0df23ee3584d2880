import Mocha from 'mocha';

const { EVENT_RUN_END } = Mocha.Runner.constants;

/**
 * Mocha's spec reporter, plus a closing line in the plain form CI tools read:
 * `N passed, N failed` (and `, N skipped` when any test was skipped).
 */
class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      console.log(`${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}`);
    });
  }
}

export = SummaryReporter;

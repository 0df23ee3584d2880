import { runCallbackChaos } from './callbacks';
import { missedFigures } from './consistency';
import { type SuiteOptions, suiteOptionsOf } from './deployment';
import { runHandlerConcurrency } from './handlers';
import { runLoadHeld } from './load';
import { runRestarts } from './restarts';
import { runWorkerCrash } from './worker-crash';

/**
 * `npm run chaos`: the reliability suites (issue 19, and the handlers suite of issue 28), one after another, each starting and
 * stopping its own deployment, then one summary line per suite. `--bounded` runs the CI sizes
 * (a few minutes in all); names pick suites (`npm run chaos -- --bounded restarts load`).
 * `--cluster` runs them on the production topology (issue 32: the Temporal server on Postgres,
 * several API instances behind a proxy, several workers; deployment.ts), all but `handlers`,
 * whose runs continue as new early through the dev server's dynamic config.
 * Exit 0 only when every suite's expected zeros held.
 */
const SUITES = {
  'worker-crash': runWorkerCrash,
  callbacks: runCallbackChaos,
  restarts: runRestarts,
  load: runLoadHeld,
  handlers: runHandlerConcurrency,
} satisfies Record<string, (options: SuiteOptions) => Promise<boolean>>;
type Name = keyof typeof SUITES;
const ON_CLUSTER: Name[] = ['worker-crash', 'callbacks', 'restarts', 'load'];

async function main(): Promise<boolean> {
  const args = process.argv.slice(2);
  const options = suiteOptionsOf(args);
  const { bounded, cluster } = options;
  const named = args.filter((a) => !a.startsWith('--'));
  const offered = cluster ? ON_CLUSTER : (Object.keys(SUITES) as Name[]);
  const unknown = named.filter((n) => !offered.includes(n as Name));
  if (unknown.length)
    throw new Error(`no suite ${unknown.join(', ')}${cluster ? ' on the cluster' : ''}; suites: ${offered.join(', ')}`);
  const chosen = (named.length ? named : offered) as Name[];
  const how = [bounded && 'bounded', cluster && 'cluster'].filter(Boolean).join(', ');
  const results: { name: Name; ok: boolean; seconds: number; error?: unknown; missed?: string[] }[] = [];
  for (const name of chosen) {
    const started = Date.now();
    const missedBefore = missedFigures.length;
    const missed = () => missedFigures.slice(missedBefore);
    console.log(`\n=== ${name}${how ? ` (${how})` : ''}`);
    try {
      const ok = await SUITES[name](options);
      results.push({ name, ok, seconds: (Date.now() - started) / 1000, missed: missed() });
    } catch (error) {
      console.error(error);
      results.push({ name, ok: false, seconds: (Date.now() - started) / 1000, error, missed: missed() });
    }
  }
  console.log(`\nChaos suites${how ? ` (${how})` : ''}:`);
  // The summary says what missed, so the last lines of a CI log are enough to know why.
  for (const r of results)
    console.log(
      `  ${r.name.padEnd(14)} ${r.ok ? 'every expected zero held' : r.error ? 'FAILED (crashed)' : 'FAILED'}  ${r.seconds.toFixed(0)} s` +
        (r.missed?.length ? `  (${r.missed.join('; ')})` : '') +
        (r.error ? `  ${String(r.error instanceof Error ? r.error.message : r.error).slice(0, 300)}` : ''),
    );
  return results.every((r) => r.ok);
}

main().then(
  (ok) => process.exit(ok ? 0 : 1),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

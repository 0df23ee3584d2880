import { runCallbackChaos } from './callbacks';
import { missedFigures } from './consistency';
import { runHandlerConcurrency } from './handlers';
import { runLoadHeld } from './load';
import { runRestarts } from './restarts';
import { runWorkerCrash } from './worker-crash';

/**
 * `npm run chaos`: the reliability suites (issue 19, and the handlers suite of issue 28), one after another, each starting and
 * stopping its own deployment, then one summary line per suite. `--bounded` runs the CI sizes
 * (a few minutes in all); names pick suites (`npm run chaos -- --bounded restarts load`).
 * Exit 0 only when every suite's expected zeros held.
 */
const SUITES = {
  'worker-crash': (bounded: boolean) => runWorkerCrash({ bounded }),
  callbacks: (bounded: boolean) => runCallbackChaos({ bounded }),
  restarts: (bounded: boolean) => runRestarts({ bounded }),
  load: (bounded: boolean) => runLoadHeld({ bounded }),
  handlers: (bounded: boolean) => runHandlerConcurrency({ bounded }),
} satisfies Record<string, (bounded: boolean) => Promise<boolean>>;
type Name = keyof typeof SUITES;

async function main(): Promise<boolean> {
  const args = process.argv.slice(2);
  const bounded = args.includes('--bounded');
  const named = args.filter((a) => !a.startsWith('--'));
  const unknown = named.filter((n) => !(n in SUITES));
  if (unknown.length) throw new Error(`unknown suite ${unknown.join(', ')}; suites: ${Object.keys(SUITES).join(', ')}`);
  const chosen = (named.length ? named : Object.keys(SUITES)) as Name[];
  const results: { name: Name; ok: boolean; seconds: number; error?: unknown; missed?: string[] }[] = [];
  for (const name of chosen) {
    const started = Date.now();
    const missedBefore = missedFigures.length;
    const missed = () => missedFigures.slice(missedBefore);
    console.log(`\n=== ${name}${bounded ? ' (bounded)' : ''}`);
    try {
      const ok = await SUITES[name](bounded);
      results.push({ name, ok, seconds: (Date.now() - started) / 1000, missed: missed() });
    } catch (error) {
      console.error(error);
      results.push({ name, ok: false, seconds: (Date.now() - started) / 1000, error, missed: missed() });
    }
  }
  console.log(`\nChaos suites${bounded ? ' (bounded)' : ''}:`);
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

import { spawn } from 'node:child_process';
import path from 'node:path';

/**
 * `npm run bench`: every benchmark, each printing its ratio against a baseline from the same
 * run. Each runs in a process of its own, so none inherits another's sockets, caches or garbage.
 * Their output passes through as it comes; at the end, every goal line of the run is printed
 * again under its benchmark and heading, so one run's verdicts read in one place.
 */
const BENCHMARKS = [
  'foundation.ts',
  'auth.ts',
  'kyc.ts',
  'money.ts',
  'loans.ts',
  'sweep.ts',
  'installments.ts',
  'repayments.ts',
  'otp.ts',
  'presign.ts',
  'agents.ts',
  'webhooks.ts',
];

/** A verdict as the benchmarks print it: "… (goal at least 0.8) met", "… (goal under 50) NOT met". */
const VERDICT = /\(goal [^)]*\)\s*(met|NOT met)/;

interface Verdict {
  script: string;
  heading: string;
  line: string;
}

/** Runs one benchmark, its output passed through; the verdicts it printed, each under the last heading before it. */
function runOne(script: string): Promise<{ code: number | null; verdicts: Verdict[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, script)], {
    stdio: ['inherit', 'pipe', 'inherit'],
    cwd: path.resolve(__dirname, '..'),
  });
  const verdicts: Verdict[] = [];
  let heading = '';
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      if (/^\S/.test(line)) heading = line.trim();
      else if (VERDICT.test(line)) verdicts.push({ script, heading, line: line.trim() });
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, verdicts })));
}

async function main() {
  let failed = 0;
  const verdicts: Verdict[] = [];
  for (const script of BENCHMARKS) {
    const run = await runOne(script);
    verdicts.push(...run.verdicts);
    if (run.code !== 0) {
      console.error(`${script} failed (${run.code})`);
      failed += 1;
    }
  }
  console.log('\nGoals in this run:');
  for (const v of verdicts) console.log(`  ${v.script.padEnd(16)} ${v.heading}\n  ${''.padEnd(16)}   ${v.line}`);
  process.exit(failed === 0 ? 0 : 1);
}

void main();

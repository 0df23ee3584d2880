import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * `npm run bench`: every benchmark, each printing its ratio against a baseline from the same
 * run. Each runs in a process of its own, so none inherits another's sockets, caches or garbage.
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

let failed = 0;
for (const script of BENCHMARKS) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, script)], {
    stdio: 'inherit',
    cwd: path.resolve(__dirname, '..'),
  });
  if (run.status !== 0) {
    console.error(`${script} failed (${run.status ?? run.signal})`);
    failed += 1;
  }
}
process.exit(failed === 0 ? 0 : 1);

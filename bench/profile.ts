import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { topFrames } from './profile-summary';

/**
 * `npm run bench:profile` (issue 34): CPU profiles (`--cpu-prof`) of the API under the
 * benchmarks whose goals are about its cost (the middleware stack, whoami, presign, the agents
 * list, the installment lists) and of the API and the worker under the push and repayment
 * benchmarks, each benchmark run as `npm run bench` runs it. Every process the benchmark starts writes its profile at exit under
 * .data/profiles/<time>/<benchmark>/<process>/ (open one in Chrome DevTools or speedscope); the
 * top frames by self time of each are printed. BENCH_PROFILES picks some (foundation,whoami,...).
 */
const BENCHMARKS: Record<string, string> = {
  foundation: 'foundation.ts',
  whoami: 'auth.ts',
  presign: 'presign.ts',
  agents: 'agents.ts',
  installments: 'installments.ts',
  push: 'money.ts',
  repayments: 'repayments.ts',
};

const root = path.resolve(__dirname, '..');
const run = path.join(root, '.data', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
const picked = (process.env.BENCH_PROFILES ?? Object.keys(BENCHMARKS).join(',')).split(',');

/** Every profile under `dir`, each with the process folder it was written in. */
function profilesUnder(dir: string): { process: string; file: string }[] {
  const found: { process: string; file: string }[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...profilesUnder(full));
    else if (entry.name.endsWith('.cpuprofile')) found.push({ process: path.basename(dir), file: full });
  }
  return found;
}

let failed = 0;
for (const name of picked) {
  const script = BENCHMARKS[name];
  if (!script) throw new Error(`no benchmark ${name} (one of ${Object.keys(BENCHMARKS).join(', ')})`);
  const dir = path.join(run, name);
  mkdirSync(dir, { recursive: true });
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, script)], {
    stdio: 'inherit',
    cwd: root,
    env: { ...process.env, BENCH_PROFILE_DIR: dir },
  });
  if (result.status !== 0) failed += 1;
  // A launcher (tsx's) writes a profile too, nearly empty: the busiest of each process folder counts.
  const busiest = new Map<string, { file: string; busyMs: number; top: ReturnType<typeof topFrames> }>();
  for (const { process: proc, file } of profilesUnder(dir)) {
    if (statSync(file).size === 0) continue;
    const top = topFrames(file);
    if ((busiest.get(proc)?.busyMs ?? -1) < top.busyMs) busiest.set(proc, { file, busyMs: top.busyMs, top });
  }
  console.log(`\nProfiles of ${name} (${script}), top frames by self time:`);
  for (const [proc, { file, top }] of busiest) {
    console.log(`  ${proc}: ${(top.busyMs / 1000).toFixed(1)} s busy  (${path.relative(root, file)})`);
    for (const f of top.frames)
      console.log(`    ${(100 * f.share).toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(6)} ms  ${f.frame}`);
  }
}
process.exit(failed === 0 ? 0 : 1);

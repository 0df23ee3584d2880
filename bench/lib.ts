import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';

export interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export interface Target {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** A POST with this JSON body (GET otherwise). */
  json?: unknown;
}

/** Load one URL at a fixed concurrency for a while; requests/s and latency percentiles (ms). */
export async function measure(target: Target, connections: number, seconds: number): Promise<Measurement> {
  const result = await autocannon({
    url: target.url,
    connections,
    duration: seconds,
    headers: { ...target.headers, ...(target.json !== undefined && { 'content-type': 'application/json' }) },
    ...(target.json !== undefined && { method: 'POST' as const, body: JSON.stringify(target.json) }),
  });
  const errors = result.errors + result.timeouts + result.non2xx;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors };
}

/**
 * Measures a baseline and a candidate in alternating rounds (so drift on a shared machine hits
 * both alike) and prints the candidate/baseline throughput ratio against the goal.
 */
export async function compare(options: {
  title: string;
  baseline: Target;
  candidate: Target;
  /** The ratio to reach, when the issue sets one. */
  goal?: number;
  connections?: number;
  seconds?: number;
  rounds?: number;
}): Promise<number> {
  const { connections = 16, seconds = 4, rounds = 3 } = options;
  await measure(options.baseline, connections, 1); // warm both up
  await measure(options.candidate, connections, 1);
  const base: Measurement[] = [];
  const cand: Measurement[] = [];
  for (let i = 0; i < rounds; i++) {
    base.push(await measure(options.baseline, connections, seconds));
    cand.push(await measure(options.candidate, connections, seconds));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const summary = (ms: Measurement[]) => ({
    rps: median(ms.map((m) => m.rps)),
    p50: median(ms.map((m) => m.p50)),
    p99: median(ms.map((m) => m.p99)),
    errors: ms.reduce((n, m) => n + m.errors, 0),
  });
  const b = summary(base);
  const c = summary(cand);
  const ratio = c.rps / b.rps;
  console.log(`\n${options.title}  (${connections} connections, ${rounds} x ${seconds}s rounds, medians)`);
  console.log(
    `  baseline   ${options.baseline.name.padEnd(44)} ${b.rps.toFixed(0).padStart(7)} req/s  p50 ${b.p50} ms  p99 ${b.p99} ms  errors ${b.errors}`,
  );
  console.log(
    `  candidate  ${options.candidate.name.padEnd(44)} ${c.rps.toFixed(0).padStart(7)} req/s  p50 ${c.p50} ms  p99 ${c.p99} ms  errors ${c.errors}`,
  );
  const verdict =
    options.goal === undefined
      ? '(no goal set)'
      : `(goal at least ${options.goal}) ${ratio >= options.goal ? 'met' : 'NOT met'}`;
  console.log(`  ratio ${ratio.toFixed(2)} ${verdict}`);
  if (b.errors + c.errors > 0) console.log('  warning: some requests failed; the ratio is not trustworthy');
  return ratio;
}

/**
 * What every process a benchmark starts inherits: the AWS SDK's notice that its releases after
 * January 2027 need Node 22 is printed once by each process, and would be most of a suite's output.
 */
const QUIET = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

/**
 * Under `npm run bench:profile` (BENCH_PROFILE_DIR set), a started process writes its CPU profile
 * at exit into a folder of its own there, named after it (node refuses --cpu-prof in NODE_OPTIONS:
 * processes are started as `node <flags> --import tsx <script>`).
 */
const profileArgs = (name: string): string[] =>
  process.env.BENCH_PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${path.join(process.env.BENCH_PROFILE_DIR, name)}`]
    : [];

/**
 * Starts a bench server script in its own process (the load generator must not share the
 * server's event loop) and resolves with the JSON line it prints once listening.
 */
export async function startServer<T>(
  script: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ info: T; child: ChildProcess }> {
  const root = path.resolve(__dirname, '..');
  const name = `server-${path.basename(script, '.ts')}`;
  const child = spawn(
    process.execPath,
    [...profileArgs(name), '--import', 'tsx', path.join(__dirname, 'servers', script)],
    { cwd: root, env: { ...process.env, ...QUIET, LOG_LEVEL: 'silent', ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const info = await new Promise<T>((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk;
      const line = buffered.split('\n').find((l) => l.startsWith('{'));
      if (!line) return;
      child.stdout!.off('data', onData).resume();
      resolve(JSON.parse(line) as T);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { info, child };
}

/**
 * Runs `work` against a bench server script in its own process (see startServer), and stops
 * the server afterwards, waiting for it to exit (it drops what it created).
 */
export async function withServer<T, R>(script: string, work: (info: T) => Promise<R>): Promise<R> {
  const { info, child } = await startServer<T>(script);
  try {
    return await work(info);
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  }
}

/**
 * Starts one of the service's production entry points (api/server.ts, worker/main.ts) in its
 * own process, as deployed (`serviceNodeArgs`: its node flags in production), and resolves once
 * its log shows `ready`. Node runs the TypeScript
 * through tsx in the same process, so the pid is the service's own (for memory readings).
 * BENCH_NODE_ARGS (e.g. --cpu-prof) is passed to node. Its log (stdout) is dropped once it is
 * ready, or kept under BENCH_LOG_DIR as `<entry name>-<pid>.log` (a chaos run's failure to read).
 */
export async function startService(
  entry: string,
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  serviceNodeArgs: string[] = [],
): Promise<ChildProcess> {
  const root = path.resolve(__dirname, '..');
  const nodeArgs = [
    ...serviceNodeArgs,
    ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    ...profileArgs(path.basename(path.dirname(entry))), // api/server.ts: api; worker/main.ts: worker
  ];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, entry)], {
    cwd: root,
    env: { ...process.env, ...QUIET, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered = (buffered + chunk).slice(-10_000);
      if (!ready.test(buffered)) return;
      child.stdout!.off('data', onData);
      const logDir = process.env.BENCH_LOG_DIR;
      if (logDir) {
        mkdirSync(logDir, { recursive: true });
        const log = createWriteStream(path.join(logDir, `${path.basename(entry, '.ts')}-${child.pid}.log`));
        log.write(buffered);
        child.stdout!.pipe(log);
      } else child.stdout!.resume();
      resolve();
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code}`)));
  });
  return child;
}

/** Stops a child process and waits for it to exit. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}

/** The pids of processes whose command line contains `needle` (e.g. every postgres backend). */
export function pidsMatching(needle: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * CPU seconds each named group of processes spends while `work` runs (processes that come and
 * go meanwhile, such as Postgres backends, are counted from when they are first seen).
 */
export async function cpuDuring<T>(
  groups: Record<string, () => number[]>,
  work: () => Promise<T>,
): Promise<{ result: T; cpu: Record<string, number> }> {
  const read = () =>
    Object.fromEntries(
      Object.entries(groups).map(([name, pids]) => [name, new Map(pids().map((pid) => [pid, cpuSeconds(pid)]))]),
    );
  const before = read();
  const result = await work();
  const after = read();
  const cpu = Object.fromEntries(
    Object.keys(groups).map((name) => [
      name,
      [...after[name]!].reduce((sum, [pid, seconds]) => sum + seconds - (before[name]!.get(pid) ?? 0), 0),
    ]),
  );
  return { result, cpu };
}

/** What a loop of requests measured: their rate and latency percentiles (ms). */
export interface Loop {
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
function summary(latencies: number[], errors: number, ms: number): Loop {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    perSecond: latencies.length / (ms / 1000),
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors,
  };
}

/** `op` run back to back by `concurrency` callers for `seconds`. */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  op: (i: number) => Promise<void>,
): Promise<Loop> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const at = performance.now();
        try {
          await op(next++);
          latencies.push(performance.now() - at);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  return summary(latencies, errors, performance.now() - started);
}

/** `op` started at a fixed rate for `seconds`, however long each takes. */
export async function openLoop(perSecond: number, seconds: number, op: (i: number) => Promise<void>): Promise<Loop> {
  const latencies: number[] = [];
  let errors = 0;
  const runs: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < perSecond * seconds; i++) {
    const due = started + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const at = performance.now();
    runs.push(
      op(i).then(
        () => void latencies.push(performance.now() - at),
        () => void (errors += 1),
      ),
    );
  }
  await Promise.all(runs);
  return summary(latencies, errors, performance.now() - started);
}

export const line = (name: string, m: Loop, unit: string) =>
  `  ${name.padEnd(58)} ${m.perSecond.toFixed(0).padStart(6)} ${unit}/s  p50 ${m.p50.toFixed(0)} ms  p99 ${m.p99.toFixed(0)} ms  errors ${m.errors}`;

/** `work(i)` for every i below `count`, `size` at a time: preparing many runs without flooding the service. */
export async function inBatches(count: number, work: (i: number) => Promise<void>, size = 8): Promise<void> {
  await mapBounded(
    Array.from({ length: count }, (_, i) => i),
    work,
    size,
  );
}

/**
 * `work` over `items`, at most `size` at a time, the results in order: a benchmark's setup (tokens
 * minted, offers made) must not open thousands of connections at once to a simulator or the API,
 * which a busy 2-core machine answers with timeouts.
 */
export async function mapBounded<T, R>(items: T[], work: (item: T, i: number) => Promise<R>, size = 16): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!, i);
    }),
  );
  return results;
}

/** The Prometheus text of every API instance at `apiUrls` (GET /metrics), one after another. */
export async function metricsOf(apiUrls: string[]): Promise<string> {
  const texts = await Promise.all(apiUrls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  return texts.join('\n');
}

/** A POST to the API as the i-th of `tokens`, whose answer must have `expected` status: its JSON body. */
export function poster(apiUrl: string, tokens: string[]) {
  return async (i: number, path: string, body: unknown, expected: number): Promise<Record<string, unknown>> => {
    const response = await fetch(`${apiUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[i]}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`POST ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
}

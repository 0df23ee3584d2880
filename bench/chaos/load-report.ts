import { metricsOf } from '../lib';
import type { RouteFigures, RunFigures } from './load-driver';
import type { PushFigures } from './load-pushes';
import { mb, type MemoryReading } from './memory';

export type ServiceMemory = Record<'API' | 'worker', MemoryReading>;

/** Requests, 5xx, unanswered and unexpected answers over every route of a run. */
export function totalsOf(run: RunFigures) {
  const all = [...run.routes.values()];
  const sum = (pick: (f: (typeof all)[number]) => number) => all.reduce((n, f) => n + pick(f), 0);
  return {
    count: sum((f) => f.ok + f.client + f.server + f.failed),
    server: sum((f) => f.server),
    failed: sum((f) => f.failed),
    unexpected: sum((f) => f.unexpected),
  };
}

/** `sorted`'s p-quantile (nearest rank); NaN when empty. */
export const quantile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!;

/** The per-route table (count, p50, p99, max, 2xx, 4xx, 5xx, no answer) and a line for all routes. */
export function printRoutes(run: RunFigures, order: readonly string[]): void {
  const ms = (v: number) => (Number.isNaN(v) ? '-' : v.toFixed(0)).padStart(7);
  const row = (name: string, f: Omit<RouteFigures, 'route'>) => {
    const sorted = [...f.latencies].sort((a, b) => a - b);
    const count = f.ok + f.client + f.server + f.failed;
    console.log(
      `  ${name.padEnd(52)} ${String(count).padStart(6)} ${ms(quantile(sorted, 0.5))} ${ms(quantile(sorted, 0.99))} ` +
        `${ms(sorted.at(-1) ?? NaN)} ${String(f.ok).padStart(6)} ${String(f.client).padStart(5)} ${String(f.server).padStart(5)} ${String(f.failed).padStart(6)}`,
    );
  };
  console.log(
    `  ${'route'.padEnd(52)} ${'count'.padStart(6)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'max ms'.padStart(7)} ` +
      `${'2xx'.padStart(6)} ${'4xx'.padStart(5)} ${'5xx'.padStart(5)} ${'no ans'.padStart(6)}`,
  );
  const all: Omit<RouteFigures, 'route'> = { latencies: [], ok: 0, client: 0, server: 0, failed: 0, unexpected: 0 };
  for (const name of order) {
    const f = run.routes.get(name);
    if (!f) continue;
    row(name, f);
    all.latencies.push(...f.latencies);
    all.ok += f.ok;
    all.client += f.client;
    all.server += f.server;
    all.failed += f.failed;
  }
  row('all routes', all);
  for (const f of run.routes.values())
    if (f.firstUnexpected) console.log(`  first unexpected answer of ${f.route}: ${f.firstUnexpected}`);
}

export function printPushes(pushes: PushFigures): void {
  const at = (p: number) => quantile(pushes.completion, p).toFixed(0);
  console.log(
    `  pushes (preparation, warm-up and run): ${pushes.accepted} accepted, ${pushes.posted} POSTED, ${pushes.failed} FAILED, ` +
      `${pushes.left} not ended; accepted to ended p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`,
  );
  console.log(
    `  of those: ${pushes.noCallback} ended with no callback received (the status query settled them), ` +
      `${pushes.unanswered} whose prompt's answer never came back`,
  );
}

/** Least-squares slope of `values` over `at` (seconds), per 10 minutes; NaN below 3 points. */
function slopePer10Minutes(at: number[], values: number[]): number {
  if (at.length < 3) return NaN;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [mx, my] = [mean(at), mean(values)];
  const cov = at.reduce((sum, x, i) => sum + (x - mx) * (values[i]! - my), 0);
  const variance = at.reduce((sum, x) => sum + (x - mx) ** 2, 0);
  return (cov / variance) * 600;
}

export function printMemory(
  start: ServiceMemory,
  end: ServiceMemory,
  samples: ({ at: number } & ServiceMemory)[],
  bounds: { rss: number; heap: number },
): void {
  const f = (bytes: number) => mb(bytes).toFixed(1);
  const signed = (megabytes: number) => `${megabytes >= 0 ? '+' : ''}${megabytes.toFixed(1)}`;
  console.log(
    `  memory, MB, each reading after a forced full GC (start: after the warm-up; end: after the drain; bounds on the growth: RSS ${bounds.rss}, heap ${bounds.heap}):`,
  );
  for (const name of ['API', 'worker'] as const) {
    const [s, e] = [start[name], end[name]];
    const at = samples.map((m) => m.at);
    const trend = (key: keyof MemoryReading) =>
      signed(
        slopePer10Minutes(
          at,
          samples.map((m) => mb(m[name][key])),
        ),
      );
    console.log(
      `    ${name.padEnd(7)} RSS ${f(s.rss)} → ${f(e.rss)} (${signed(mb(e.rss - s.rss))})   heap used ${f(s.heapUsed)} → ${f(e.heapUsed)} (${signed(mb(e.heapUsed - s.heapUsed))})` +
        `   trend over the samples, per 10 min: RSS ${trend('rss')}, heap ${trend('heapUsed')}`,
    );
    console.log(
      `            RSS/heap during the run: ${samples.map((m) => `${m.at.toFixed(0)} s ${f(m[name].rss)}/${f(m[name].heapUsed)}`).join(', ')}`,
    );
  }
}

/** Prints each expected zero with its value; true when all are 0. */
export function printZeros(zeros: [string, number][]): boolean {
  for (const [name, value] of zeros)
    console.log(
      `  ${name.padEnd(60)} ${value.toFixed(Number.isInteger(value) ? 0 : 1).padStart(7)}  (0 expected) ${value === 0 ? 'ok' : 'NOT 0'}`,
    );
  return zeros.every(([, value]) => value === 0);
}

/**
 * The STK callbacks the API answered, by status, from its /metrics (the provider does not retry
 * a callback: one answered 429 or never answered leaves the push to the status query).
 */
export async function callbackStatuses(apiUrls: string[]): Promise<string> {
  const text = await metricsOf(apiUrls);
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^http_requests_total\{(.*)\} (\d+)/.exec(line);
    if (!match || !match[1]!.includes('/callbacks/stk/')) continue;
    const status = /status="(\d+)"/.exec(match[1]!)?.[1] ?? '?';
    counts.set(status, (counts.get(status) ?? 0) + Number(match[2]));
  }
  return [...counts].map(([status, n]) => `${status} ${n}`).join(', ') || 'none';
}

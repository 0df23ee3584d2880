import type { MixRequest } from './load-mix';
import { quantile } from './load-report';
import { sleep } from './random';

/** What one route answered over a run. Latencies in ms, from each request's scheduled moment. */
export interface RouteFigures {
  route: string;
  latencies: number[];
  ok: number;
  client: number;
  server: number;
  /** No answer: the connection failed or REQUEST_TIMEOUT_MS passed. */
  failed: number;
  /** Answers whose status is not one a correct service gives this request (4xx and 5xx included). */
  unexpected: number;
  /** The first unexpected answer (status and the start of its body), to begin the diagnosis with. */
  firstUnexpected?: string;
}

export interface RunFigures {
  routes: Map<string, RouteFigures>;
  sent: number;
  seconds: number;
  /** How late the generator sent its latest request against the schedule (its own health). */
  maxLateMs: number;
}

const REQUEST_TIMEOUT_MS = 30_000;

/**
 * An open loop: `rate` requests a second for `seconds`, each sent at its scheduled moment whether
 * or not earlier ones have answered, and timed from that moment, so a service that stalls shows
 * in the latency of every request it delays (no coordinated omission).
 */
export async function openLoopMix(options: {
  apiUrl: string;
  rate: number;
  seconds: number;
  draw: () => MixRequest;
  /** Every answer with its status and body (a push's 201 names the transaction to follow). */
  answered: (request: MixRequest, status: number, body: string) => void;
}): Promise<RunFigures> {
  const routes = new Map<string, RouteFigures>();
  const figures = (route: string) => {
    let f = routes.get(route);
    if (!f) routes.set(route, (f = { route, latencies: [], ok: 0, client: 0, server: 0, failed: 0, unexpected: 0 }));
    return f;
  };
  const send = async (request: MixRequest, due: number) => {
    const f = figures(request.route);
    try {
      const response = await fetch(`${options.apiUrl}${request.path}`, {
        method: request.method,
        headers: {
          authorization: `Bearer ${request.token}`,
          ...(request.body !== undefined && { 'content-type': 'application/json' }),
        },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const body = await response.text();
      f.latencies.push(performance.now() - due);
      if (response.status >= 500) f.server++;
      else if (response.status >= 400) f.client++;
      else f.ok++;
      if (!request.expected.includes(response.status)) {
        f.unexpected++;
        f.firstUnexpected ??= `${response.status} ${body.slice(0, 300)}`;
        return;
      }
      options.answered(request, response.status, body);
    } catch (error) {
      f.failed++;
      f.firstUnexpected ??= `no answer: ${error instanceof Error ? error.message : String(error)}`;
    }
  };

  const total = Math.round(options.rate * options.seconds);
  const inFlight = new Set<Promise<void>>();
  let maxLateMs = 0;
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / options.rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    maxLateMs = Math.max(maxLateMs, performance.now() - due);
    const sent: Promise<void> = send(options.draw(), due).finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  }
  await Promise.all(inFlight);
  return { routes, sent: total, seconds: (performance.now() - started) / 1000, maxLateMs };
}

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

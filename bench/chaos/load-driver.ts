import type { MixRequest } from './load-mix';
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

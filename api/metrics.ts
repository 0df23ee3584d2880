import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** HTTP metrics of one API instance, in its own registry so several apps can live in one process. */
export function createHttpMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route template, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency, by route template, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const callbacksRefused = new Counter({
    name: 'provider_callbacks_refused_total',
    help: 'Provider callbacks refused or not stored, by provider and reason (source, token, signature, unknown_job, over_cap)',
    labelNames: ['provider', 'reason'] as const,
    registers: [registry],
  });
  return {
    registry,
    /** A callback that was not stored: counted here and logged (metadata only). */
    callbackRefused(provider: string, reason: string) {
      callbacksRefused.inc({ provider, reason });
    },
    observe(labels: { method: string; route: string; status: number }, seconds: number) {
      const l = { method: labels.method, route: labels.route, status: String(labels.status) };
      requests.inc(l);
      duration.observe(l, seconds);
    },
  };
}
export type HttpMetrics = ReturnType<typeof createHttpMetrics>;

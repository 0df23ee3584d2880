import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';

/**
 * What every provider simulator (identity verification, mobile money, and the SMS, e-mail, bank,
 * object store and invoice extraction ones to come) is built on: a Koa server on 127.0.0.1, a
 * control API under /_control for tests, the provider's own API, and timers for what the
 * provider does later (callbacks, decisions), all cleared on reset and on close. Each simulator
 * brings its routes, its fault modes (as middleware before routing) and its error envelope.
 */

/** Work a simulator schedules for later; cleared all at once on reset or close. */
export class SimulatorTimers {
  private readonly pending = new Set<NodeJS.Timeout>();

  /** Runs `work` after `ms`; its failure is the simulated provider's, never the test's. */
  later(ms: number, work: () => unknown): void {
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      void Promise.resolve()
        .then(work)
        .catch(() => {});
    }, ms);
    this.pending.add(timer);
  }

  /** Waits `ms`, or less when `cutShort` calls back first (a held request whose client gave up). */
  hold(ms: number, cutShort: (cancel: () => void) => void): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, ms);
      this.pending.add(timer);
      cutShort(() => {
        clearTimeout(timer);
        this.pending.delete(timer);
        resolve();
      });
    });
  }

  clear(): void {
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
  }
}

/** The control API's router: every route under /_control. */
export const controlRouter = () => new Router({ prefix: '/_control' });

export interface SimulatorServerOptions {
  /** 0 or absent: a free port. */
  port?: number;
  /** Before routing: error envelopes and fault modes that answer for the provider. */
  before: Middleware[];
  /** The request body parser (JSON by default in each simulator; some read multipart or zip in their routes). */
  bodyParser: Middleware;
  control: Router;
  api: Router;
  timers: SimulatorTimers;
}

export interface RunningSimulatorServer {
  url: string;
  close(): Promise<void>;
}

export async function startSimulatorServer(options: SimulatorServerOptions): Promise<RunningSimulatorServer> {
  const app = new Koa();
  for (const middleware of options.before) app.use(middleware);
  app.use(options.bodyParser);
  app.use(options.control.routes());
  app.use(options.api.routes());
  const server: Server = app.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      options.timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

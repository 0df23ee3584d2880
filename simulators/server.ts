import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import { selfSignedCertificate, type SelfSignedCertificate } from './certificates';

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

/**
 * A simulator's fault modes on its control API: `GET /mode`, `PATCH /mode` (a partial mode,
 * checked by `schema`; 400 otherwise; `onChange` hears each accepted patch) and `POST /reset`
 * (the defaults back, and `onReset` to forget what was sent). Answers the live mode.
 */
export function faultModes<M extends object>(
  control: Router,
  schema: { safeParse(value: unknown): { success: true; data: Partial<M> } | { success: false; error: Error } },
  defaults: M,
  onReset: () => void,
  onChange?: (patch: Partial<M>) => void,
): { readonly current: M } {
  let mode = { ...defaults };
  control.get('/mode', (ctx) => {
    ctx.body = mode;
  });
  control.patch('/mode', (ctx) => {
    const parsed = schema.safeParse(ctx.request.body);
    if (!parsed.success) {
      ctx.status = 400;
      ctx.body = { message: parsed.error.message };
      return;
    }
    mode = { ...mode, ...parsed.data };
    onChange?.(parsed.data);
    ctx.body = mode;
  });
  control.post('/reset', (ctx) => {
    mode = { ...defaults };
    onReset();
    ctx.status = 204;
  });
  return {
    get current() {
      return mode;
    },
  };
}

export interface SimulatorServerOptions {
  /** 0 or absent: a free port. */
  port?: number;
  /** Before routing: error envelopes and fault modes that answer for the provider. */
  before: Middleware[];
  /** The request body parser (JSON by default in each simulator; some read multipart or zip in their routes). */
  bodyParser: Middleware;
  control: Router;
  api: Router | Router[];
  timers: SimulatorTimers;
  /** Also serve the same API over TLS (official SDKs force https); 0 or absent: a free port. */
  tls?: { port?: number };
}

export interface RunningSimulatorServer {
  url: string;
  /** The TLS address, when asked for: its certificate is simulatorCertificate(). */
  tlsUrl?: string;
  close(): Promise<void>;
}

let certificate: SelfSignedCertificate | undefined;

/**
 * The TLS certificate of every simulator in this process, made once (for 127.0.0.1 and
 * localhost). A client trusts it through its CA option, or NODE_EXTRA_CA_CERTS naming a file
 * holding it.
 */
export function simulatorCertificate(): SelfSignedCertificate {
  certificate ??= selfSignedCertificate({
    commonName: 'lending-service provider simulator',
    hosts: ['127.0.0.1', 'localhost'],
  });
  return certificate;
}

/** Listens on 127.0.0.1 and answers the address. */
export async function listen(server: Server | TlsServer, port = 0): Promise<number> {
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** Closes a server now, its keep-alive connections too. */
export async function shut(server: Server | TlsServer): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

export async function startSimulatorServer(options: SimulatorServerOptions): Promise<RunningSimulatorServer> {
  const app = new Koa();
  for (const middleware of options.before) app.use(middleware);
  app.use(options.bodyParser);
  app.use(options.control.routes());
  for (const api of [options.api].flat()) app.use(api.routes());
  const server: Server = createServer(app.callback());
  const port = await listen(server, options.port);
  const tlsServer = options.tls ? createTlsServer(simulatorCertificate(), app.callback()) : undefined;
  const tlsPort = tlsServer ? await listen(tlsServer, options.tls?.port) : undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    tlsUrl: tlsPort === undefined ? undefined : `https://127.0.0.1:${tlsPort}`,
    async close() {
      options.timers.clear();
      await Promise.all([shut(server), tlsServer && shut(tlsServer)]);
    },
  };
}

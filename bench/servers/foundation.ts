import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { Client, Connection } from '@temporalio/client';
import Koa from 'koa';
import pino from 'pino';
import { buildApp } from '../../api/app';
import { generateServiceSigningKey, loadServiceKeys } from '../../api/auth/service-keys';
import { accessLog } from '../../api/middleware/access-log';
import { errorHandler } from '../../api/middleware/errors';
import { requestId } from '../../api/middleware/request-id';
import { createHttpMetrics } from '../../api/metrics';
import { loadConfig } from '../../config';
import { createLogger } from '../../config/logger';
import { createDb } from '../../db/knex';
import { systemClock } from '../../domain/clock';
import { mobileMoneySettings } from '../../dev/simulators';
import { createProviders } from '../../providers';

/**
 * Servers for the foundation benchmark, all in this process and loaded one at a time: a bare
 * Koa handler, the same handler behind each of the service's middleware alone, and the
 * service's own app. GET /healthz touches neither Postgres nor Temporal, so the differences are
 * the foundation's own per-request cost. Logs are serialized as in production, then discarded.
 */
async function main() {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'info' });
  const logger = createLogger(config.LOG_LEVEL, pino.destination({ dest: '/dev/null', sync: false }));
  const metrics = createHttpMetrics();
  const handler: Koa.Middleware = (ctx) => {
    ctx.body = { status: 'ok' };
  };
  const routed = () => {
    const router = new Router();
    router.get('/healthz', handler);
    return [router.routes(), router.allowedMethods()] as Koa.Middleware[];
  };
  const koa = (...middleware: Koa.Middleware[]) => {
    const app = new Koa();
    for (const m of middleware) app.use(m);
    return app;
  };
  const { app } = buildApp({
    config,
    db: createDb('postgres://unused@127.0.0.1:1/unused', 1),
    temporal: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
    // These routes never call a provider; the client only needs an address.
    providers: createProviders({
      ...config,
      KYC_PROVIDER_URL: 'http://127.0.0.1:1',
      KYC_PARTNER_ID: 'unused',
      KYC_API_KEY: 'unused',
      ...mobileMoneySettings('http://127.0.0.1:1'),
    }),
    logger,
    clock: systemClock,
    serviceKeys: await loadServiceKeys(JSON.stringify(await generateServiceSigningKey())),
  });
  const apps: Record<string, Koa> = {
    bare: koa(handler),
    'request id': koa(requestId(), handler),
    'access log + metrics': koa(accessLog(logger, metrics), handler),
    'error handler': koa(errorHandler(logger), handler),
    router: koa(...routed()),
    service: app,
  };
  const urls: Record<string, string> = {};
  for (const [name, server] of Object.entries(apps)) {
    const listening = server.listen(0, '127.0.0.1');
    await once(listening, 'listening');
    urls[name] = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/healthz`;
  }
  console.log(JSON.stringify(urls));
}

// Exit through process.exit so `node --cpu-prof` can write its profile.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
void main();

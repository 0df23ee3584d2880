import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import Koa from 'koa';
import pg from 'pg';
import pino from 'pino';
import { buildApp } from '../../api/app';
import { benchDatabase } from '../database';
import { generateServiceSigningKey, loadServiceKeys } from '../../api/auth/service-keys';
import { loadConfig } from '../../config';
import { createLogger } from '../../config/logger';
import { createDb, migrate } from '../../db/knex';
import { DEMO, seedDemoData } from '../../db/seeds/demo';
import { startDevelopmentProviders } from '../../dev/simulators';
import { systemClock } from '../../domain/clock';
import { createProviders } from '../../providers';
import { requestToken } from '../../simulators/identity';

/**
 * Servers for the authentication benchmark, on one real Postgres (DATABASE_URL's server, or an
 * embedded one) and the development identity provider's JWKS:
 *   baseline        bare Koa answering `SELECT 1` through pg
 *   service         GET /v1/auth/whoami: bearer JWT verified against the JWKS, caller resolved
 *                   (cached), rate limits in Postgres as production runs them
 *   service-memory  the same with in-process rate-limit counters (one instance)
 *   presign         POST …/uploads/presign on the service (financing token, local object store)
 * Prints their URLs and a token, as one JSON line.
 */
/** Undone on SIGTERM: the bench database and the embedded server, when one was started. */
const cleanups: (() => Promise<unknown>)[] = [];

async function main() {
  const base = loadConfig({ ...process.env, LOG_LEVEL: 'info' });
  const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
  const dev = await startDevelopmentProviders(base);
  cleanups.push(() => dev.close());
  const { idp } = dev;
  const config = { ...dev.config, DATABASE_URL: databaseUrl };
  const db = createDb(databaseUrl, config.DATABASE_POOL_MAX);
  cleanups.push(() => db.destroy());
  await migrate(db);
  await seedDemoData(db, dev.seedOptions);

  const logger = createLogger('info', pino.destination({ dest: '/dev/null', sync: false }));
  const deps = {
    config,
    db,
    temporal: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
    providers: createProviders(config),
    logger,
    clock: systemClock,
    serviceKeys: await loadServiceKeys(JSON.stringify(await generateServiceSigningKey())),
  };
  // Limits high enough never to trigger: the benchmark measures their bookkeeping, not refusals
  // (the presign quota too: its count runs, its refusal never does).
  const limits = {
    RATE_LIMIT_CALLER_POINTS: 1e9,
    RATE_LIMIT_ORGANIZATION_POINTS: 1e9,
    UPLOAD_QUOTA_PENDING: 1e9,
    UPLOAD_QUOTA_BYTES: 1e15,
  };
  const service = buildApp({ ...deps, config: { ...config, ...limits, RATE_LIMIT_MEMORY: false } }).app;
  const serviceMemory = buildApp({ ...deps, config: { ...config, ...limits, RATE_LIMIT_MEMORY: true } }).app;

  const pool = new pg.Pool({ connectionString: databaseUrl, max: config.DATABASE_POOL_MAX });
  pool.on('error', () => {}); // idle connections closed at shutdown are expected
  cleanups.push(() => pool.end());
  const baseline = new Koa();
  baseline.use(async (ctx) => {
    const { rows } = await pool.query('select 1 as ok');
    ctx.body = rows[0];
  });

  const urls: Record<string, string> = {};
  for (const [name, app, route] of [
    ['baseline', baseline, '/'],
    ['service', service, '/v1/auth/whoami'],
    ['service-memory', serviceMemory, '/v1/auth/whoami'],
  ] as const) {
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    urls[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}${route}`;
  }
  // A pending application heard from just now: GET status answers from Postgres without asking the provider.
  await db('kyc_applications')
    .where({ id: DEMO.kycApplication.id })
    .update({
      status: 'ID_VERIFICATION_PENDING',
      submitted_at: new Date(),
      provider_checked_at: new Date(Date.now() + 3_600_000),
    });
  const token = await requestToken(idp.url, 'backend', { sub: DEMO.users.customer.id, aud: config.AUTH_AUDIENCE });
  const kycStatus = urls.service!.replace('/v1/auth/whoami', `/v1/kyc/applications/${DEMO.kycApplication.id}/status`);
  const kycStatusMemory = urls['service-memory']!.replace(
    '/v1/auth/whoami',
    `/v1/kyc/applications/${DEMO.kycApplication.id}/status`,
  );
  // The demo merchant's financing user, for the presign route (merchant-scoped permission in Postgres).
  const financingToken = await requestToken(idp.url, 'financing', {
    sub: DEMO.merchant.financingSubject,
    aud: config.FINANCING_AUDIENCE,
    organization_id: DEMO.merchant.organization_id,
    permissions: ['financing.write:ORG'],
  });
  const presign = urls.service!.replace(
    '/v1/auth/whoami',
    `/v1/financing/merchants/${DEMO.merchant.id}/uploads/presign`,
  );
  console.log(JSON.stringify({ ...urls, kycStatus, kycStatusMemory, token, presign, financingToken }));
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    process.exit(0);
  });
}
void main();

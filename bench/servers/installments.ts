import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pg from 'pg';
import { encodeCursor } from '../../api/loans/transactions';
import { loadConfig } from '../../config';
import { createDb, migrate } from '../../db/knex';
import { seedDemoData } from '../../db/seeds/demo';
import { startDevelopmentProviders } from '../../dev/simulators';
import { requestToken } from '../../simulators/identity';
import { benchDatabase } from '../database';
import { BORROWER, CREDIT, seedRepayments } from '../seed-installments';
import { benchService, type Cleanups, runBenchServer } from './process';

/**
 * Servers for the installment transaction list benchmark (bench/installments.ts), on one real
 * Postgres (DATABASE_URL's server, or an embedded one) and the development identity provider:
 *   baseline  bare Koa answering `SELECT 1` through pg
 *   whoami    GET /v1/auth/whoami of the service (bearer JWT, caller, rate limits in Postgres)
 *   the service's two installment transaction lists for ONE borrower's credit account with
 *   BENCH_EVENTS repayment events (1,000,000; 50,000 with BENCH_QUICK=1), written in bulk SQL:
 *   first, middle and last page of the account list; first and last page of one installment's.
 * Prints their URLs and the borrower's token, as one JSON line. Progress goes to stderr.
 */

const EVENTS = Number(process.env.BENCH_EVENTS ?? (process.env.BENCH_QUICK ? 50_000 : 1_000_000));

async function main(cleanups: Cleanups) {
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
  const { loanId, installmentId } = await seedRepayments(db, EVENTS);

  const service = await benchService(config, db);

  const pool = new pg.Pool({ connectionString: databaseUrl, max: config.DATABASE_POOL_MAX });
  pool.on('error', () => {}); // idle connections closed at shutdown are expected
  cleanups.push(() => pool.end());
  const baseline = new Koa();
  baseline.use(async (ctx) => {
    const { rows } = await pool.query('select 1 as ok');
    ctx.body = rows[0];
  });

  const origin: Record<string, string> = {};
  for (const [name, app] of [
    ['baseline', baseline],
    ['service', service],
  ] as const) {
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  // Cursors: a page `after` the event just newer than those it shows (the list is newest first).
  const eventSeq = async (olderThan: number) =>
    (await db('loan_transactions').where({ account_id: CREDIT }).orderBy('seq', 'asc').offset(olderThan).first('seq'))
      .seq as string;
  const allocationSeq = async (olderThan: number) =>
    (
      await db('installment_allocations')
        .where({ installment_id: installmentId })
        .orderBy('seq', 'asc')
        .offset(olderThan)
        .first('seq')
    ).seq as string;
  const list = `${origin.service}/v1/accounts/${CREDIT}/installments/transactions`;
  const installmentList = `${origin.service}/v1/accounts/${CREDIT}/installments/${installmentId}/transactions`;
  const token = await requestToken(idp.url, 'backend', { sub: BORROWER.id, aud: config.AUTH_AUDIENCE });
  console.log(
    JSON.stringify({
      events: EVENTS,
      loanId,
      installmentId,
      baseline: `${origin.baseline}/`,
      whoami: `${origin.service}/v1/auth/whoami`,
      firstPage: `${list}?size=20`,
      middlePage: `${list}?size=20&after=${encodeCursor(await eventSeq(EVENTS / 2), `account:${CREDIT}`)}`,
      lastPage: `${list}?size=20&after=${encodeCursor(await eventSeq(20), `account:${CREDIT}`)}`,
      installmentFirstPage: `${installmentList}?size=20`,
      installmentLastPage: `${installmentList}?size=20&after=${encodeCursor(await allocationSeq(20), `installment:${installmentId}`)}`,
      token,
    }),
  );
}

runBenchServer(main);

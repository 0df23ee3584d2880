import type { Knex } from 'knex';
import { loadConfig } from '../config';
import { createDb, migrate } from '../db/knex';
import { DEMO, seedDemoData } from '../db/seeds/demo';
import { startDevelopmentProviders } from '../dev/simulators';
import { requestToken } from '../simulators/identity';
import { benchDatabase } from './database';
import { leaderView, seedBenchAgents } from './seed-agents';
import { BORROWER, CREDIT, seedRepayments } from './seed-installments';
import { benchService, type Cleanups, listenLocal } from './servers/process';

/**
 * `npm run bench:explain` (issue 34): every list the API serves, as Postgres runs it. The data is
 * written in bulk first (one borrower's credit account with EXPLAIN_EVENTS repayment events, the
 * agents benchmark's network of EXPLAIN_AGENTS agents, one agent's EXPLAIN_ASSIGNMENTS
 * assignments, EXPLAIN_WEBHOOK_EVENTS webhook events each delivered to one endpoint), then each
 * list is asked of the service over HTTP, as its caller, twice; Postgres's auto_explain reports
 * every statement of the second call with `EXPLAIN (ANALYZE, BUFFERS)`, as a notice on the
 * service's own connection, so what is printed is the statement the service sends, with the
 * plan Postgres chose for it (a prepared statement's generic plan included). Statements every
 * request makes (the caller's resolution, the rate-limit budgets) are left out.
 */
const SIZES = {
  events: Number(process.env.EXPLAIN_EVENTS ?? 200_000),
  agents: Number(process.env.EXPLAIN_AGENTS ?? 100_000),
  assignments: Number(process.env.EXPLAIN_ASSIGNMENTS ?? 5_000),
  webhookEvents: Number(process.env.EXPLAIN_WEBHOOK_EVENTS ?? 200_000),
};
const ORG = DEMO.organizations.demo.id;
/** Juma, the demo agent, whose customers are listed. */
const AGENT = DEMO.users.agent;
const ADMIN = DEMO.users.admin;
const ENDPOINT = '3b1e0000-0000-4000-8000-00000000e001';
/** One event in a hundred is of this type: the type filter's rare case. */
const RARE_TYPE = 'transaction.failed';

/** A v4-shaped uuid from an md5 (version and variant nibbles set), so the API's uuid checks take it. */
const uuidOf = (seed: string) => `overlay(overlay(md5(${seed}) placing '4' from 13) placing '8' from 17)::uuid`;

/** Customers (users with the role) assigned to the agent, each assignment a few days apart, a tenth of them ended. */
async function seedAssignments(db: Knex, count: number): Promise<void> {
  const id = (kind: string) => uuidOf(`'explain-${kind}-' || n`);
  await db.raw(
    `insert into users (id, organization_id, email, name, phone_number)
     select ${id('customer')}, :org, 'customer' || n || '@explain.test', 'Customer ' || n, '+2547' || lpad(n::text, 8, '0')
       from generate_series(1, :count::int) n`,
    { org: ORG, count },
  );
  await db.raw(
    `insert into user_access (user_id, organization_id, role)
     select ${id('customer')}, :org, 'CUSTOMER' from generate_series(1, :count::int) n`,
    { org: ORG, count },
  );
  await db.raw(
    `insert into agent_assignments (id, organization_id, agent_user_id, customer_user_id, assigned_at, assigned_by,
       unassigned_at, unassigned_by, is_active)
     select ${id('assignment')}, :org, :agent, ${id('customer')}, now() - n * interval '1 hour', :admin,
            case when n % 10 = 0 then now() end, case when n % 10 = 0 then :admin::uuid end, n % 10 <> 0
       from generate_series(1, :count::int) n`,
    { org: ORG, agent: AGENT.id, admin: ADMIN.id, count },
  );
  await db.raw('analyze users, user_access, agent_assignments');
}

/** One endpoint, and `count` events a minute apart each delivered to it once (one attempt each; a hundredth failed). */
async function seedWebhooks(db: Knex, count: number): Promise<void> {
  await db('webhook_endpoints').insert({
    id: ENDPOINT,
    organization_id: ORG,
    url: 'https://receiver.example/webhooks',
    event_types: ['transaction.posted', RARE_TYPE],
    secret: `whsec_${Buffer.alloc(24, 1).toString('base64')}`,
  });
  const at = `now() - (:count::int - n) * interval '1 minute'`;
  await db.raw(
    `insert into webhook_events (id, organization_id, type, resource_id, change_key, snapshot, occurred_at, dispatched_at)
     select ${uuidOf(`'explain-event-' || n`)}, :org, case when n % 100 = 0 then :rare else 'transaction.posted' end,
            'trx_explain' || n, 'trx_explain' || n || '@1', jsonb_build_object('id', n), ${at}, ${at}
       from generate_series(1, :count::int) n`,
    { org: ORG, rare: RARE_TYPE, count },
  );
  await db.raw(
    `insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, attempts, last_status_code,
       workflow_started_at, completed_at, created_at, updated_at)
     select ${uuidOf(`'explain-delivery-' || n`)}, :org, ${uuidOf(`'explain-event-' || n`)}, :endpoint,
            case when n % 100 = 0 then 'FAILED' else 'SUCCEEDED' end, 1, case when n % 100 = 0 then 500 else 200 end,
            ${at}, ${at}, ${at}, ${at}
       from generate_series(1, :count::int) n`,
    { org: ORG, endpoint: ENDPOINT, count },
  );
  await db.raw(
    `insert into webhook_attempts (delivery_id, run_id, attempt, attempted_at, status_code, duration_ms, organization_id)
     select ${uuidOf(`'explain-delivery-' || n`)}, 'run-' || n, 1, ${at}, case when n % 100 = 0 then 500 else 200 end, 40, :org
       from generate_series(1, :count::int) n`,
    { org: ORG, count },
  );
  await db.raw('analyze webhook_endpoints, webhook_events, webhook_deliveries, webhook_attempts');
}

/** Turns auto_explain on for every new connection to the database: each statement's plan, analysed, as a notice to its client. */
async function explainEveryStatement(db: Knex, database: string): Promise<void> {
  for (const [setting, value] of [
    ['session_preload_libraries', 'auto_explain'],
    ['auto_explain.log_min_duration', '0'],
    ['auto_explain.log_analyze', 'on'],
    ['auto_explain.log_buffers', 'on'],
    ['auto_explain.log_timing', 'on'],
    ['auto_explain.log_level', 'notice'],
  ])
    await db.raw(`alter database ?? set ${setting} = '${value}'`, [database]);
}

interface Plan {
  text: string;
  plan: string;
}

/** auto_explain's notice: "duration: … ms  plan:\nQuery Text: …\n<plan>". */
function planOf(message: string): Plan | undefined {
  const at = message.indexOf('Query Text:');
  if (at < 0) return undefined;
  const body = message.slice(at + 'Query Text:'.length);
  // The query text runs until the plan's root node, the first line at column 0 with its costs.
  const lines = body.split('\n');
  let planStart = lines.findIndex((line, i) => i > 0 && /^\S.*\s{2}\(cost=/.test(line));
  if (planStart < 0) planStart = 1;
  return {
    text: lines.slice(0, planStart).join(' ').replace(/\s+/g, ' ').trim(),
    plan: lines.slice(planStart).join('\n'),
  };
}

async function main(cleanups: Cleanups) {
  const base = loadConfig({ ...process.env, LOG_LEVEL: 'info' });
  const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
  const database = new URL(databaseUrl).pathname.slice(1);
  const dev = await startDevelopmentProviders(base);
  cleanups.push(() => dev.close());
  const config = { ...dev.config, DATABASE_URL: databaseUrl };
  const seedDb = createDb(databaseUrl, 4);
  cleanups.push(() => seedDb.destroy());
  await migrate(seedDb);
  await seedDemoData(seedDb, dev.seedOptions);

  const started = performance.now();
  const { installmentId } = await seedRepayments(seedDb, SIZES.events);
  const { leader } = await seedBenchAgents(seedDb, SIZES.agents);
  await seedAssignments(seedDb, SIZES.assignments);
  await seedWebhooks(seedDb, SIZES.webhookEvents);
  console.error(`explain: data written in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const agentsLast = await leaderView(seedDb, leader.user_id, 20);
  await explainEveryStatement(seedDb, database);

  // The service's own connections, opened from now on, each with its plans as notices.
  const notices: string[] = [];
  const db = createDb(databaseUrl, config.DATABASE_POOL_MAX);
  cleanups.push(() => db.destroy());
  (db.client as { pool: { on(event: string, listener: (id: number, conn: unknown) => void): void } }).pool.on(
    'createSuccess',
    (_id, conn) =>
      (conn as { on(event: 'notice', l: (m: { message?: string }) => void): void }).on('notice', (m) =>
        notices.push(m.message ?? ''),
      ),
  );
  const origin = await listenLocal(await benchService(config, db));
  const token = (sub: string) => requestToken(dev.idp.url, 'backend', { sub, aud: config.AUTH_AUDIENCE });
  const tokens = {
    borrower: await token(BORROWER.id),
    leader: await token(leader.user_id),
    agent: await token(AGENT.id),
    admin: await token(ADMIN.id),
  };

  const call = async (caller: keyof typeof tokens, path: string) => {
    const response = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${tokens[caller]}` } });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${body}`);
    return body;
  };
  // What every request asks of Postgres, whatever its route: learned from whoami, left out below.
  const common = new Set<string>();
  for (const caller of Object.keys(tokens) as (keyof typeof tokens)[]) {
    notices.length = 0;
    await call(caller, '/v1/auth/whoami');
    await call(caller, '/v1/auth/whoami');
    for (const n of notices) {
      const p = planOf(n);
      if (p) common.add(p.text);
    }
  }

  const accountList = `/v1/accounts/${CREDIT}/installments/transactions`;
  const installmentList = `/v1/accounts/${CREDIT}/installments/${installmentId}/transactions`;
  const lists: [string, keyof typeof tokens, string][] = [
    ['installment schedule of an account', 'borrower', `/v1/accounts/${CREDIT}/installments`],
    [`account's installment transactions, first page (${SIZES.events} events)`, 'borrower', `${accountList}?size=20`],
    ["one installment's transactions, first page", 'borrower', `${installmentList}?size=20`],
    [
      `agents, a leader's first page (${agentsLast.visible} of ${SIZES.agents} visible)`,
      'leader',
      '/v1/agents?size=20',
    ],
    ["agents, a leader's last page", 'leader', `/v1/agents?size=20&after=${agentsLast.lastPageAfter}`],
    ["agents, a leader's first page with q", 'leader', '/v1/agents?size=20&q=ni%20Ch'],
    [
      `an agent's customers, first page (${SIZES.assignments} assignments)`,
      'agent',
      `/v1/agents/${AGENT.id}/customers?size=20`,
    ],
    ['webhook endpoints', 'admin', '/v1/webhooks/endpoints'],
    [`webhook events, first page (${SIZES.webhookEvents} events)`, 'admin', '/v1/webhooks/events?size=20'],
    [`webhook events of a type in a hundred, first page`, 'admin', `/v1/webhooks/events?size=20&type=${RARE_TYPE}`],
    [`an endpoint's deliveries, first page`, 'admin', `/v1/webhooks/endpoints/${ENDPOINT}/deliveries?size=20`],
    [
      `an endpoint's failed deliveries (one in a hundred), first page`,
      'admin',
      `/v1/webhooks/endpoints/${ENDPOINT}/deliveries?size=20&status=FAILED`,
    ],
  ];
  // A page further on, by the list's own next link, for the lists that give one.
  const pageOf = async (caller: keyof typeof tokens, path: string) => {
    const page = JSON.parse(await call(caller, path)) as { data: { id: string }[]; links?: { next?: string | null } };
    return { first: page.data[0]?.id, next: page.links?.next?.replace(/^https?:\/\/[^/]+/, '') };
  };
  const events = await pageOf('admin', '/v1/webhooks/events?size=20');
  if (events.next) lists.push(['webhook events, second page', 'admin', events.next]);
  const account = await pageOf('borrower', `${accountList}?size=20`);
  if (account.next) lists.push(["account's installment transactions, second page", 'borrower', account.next]);
  lists.push(["an event's deliveries", 'admin', `/v1/webhooks/events/${events.first}/deliveries`]);

  for (const [title, caller, path] of lists) {
    await call(caller, path);
    notices.length = 0;
    const body = await call(caller, path);
    const plans = notices
      .map(planOf)
      .filter((p): p is Plan => p !== undefined && !common.has(p.text) && !/rate_limits/.test(p.text));
    console.log(`\n## ${title}\nGET ${path.replace(/(after|before)=[^&]+/, '$1=…')}  (${body.length} bytes answered)`);
    for (const { text, plan } of plans)
      console.log(`\n  ${text.slice(0, 400)}${text.length > 400 ? ' …' : ''}\n${plan.replace(/^/gm, '    ')}`);
    if (plans.length === 0) console.log('  (no statement of its own: answered from memory)');
  }
}

const cleanups: Cleanups = [];
main(cleanups)
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    process.exit();
  });

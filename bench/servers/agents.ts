import { loadConfig } from '../../config';
import { createDb, migrate } from '../../db/knex';
import { DEMO, seedDemoData } from '../../db/seeds/demo';
import { agentNetwork, seedAgentNetwork } from '../../db/seeds/agents';
import { startDevelopmentProviders } from '../../dev/simulators';
import { requestToken } from '../../simulators/identity';
import { benchDatabase } from '../database';
import { benchService, type Cleanups, listenLocal, runBenchServer } from './process';

/**
 * The server for the agents benchmark (issue 18), on one real Postgres (DATABASE_URL's server, or
 * an embedded one) and the development identity provider's JWKS: the service (rate limits in
 * Postgres, as production runs them) over a fresh database with the demo data and, in the demo
 * organization, an agent network of exactly AGENTS agents: 20 leaders with 10 managers each and
 * the rest agents, about 500 per manager (the generator's 499 each, less the last manager's last
 * 20), written in bulk by the seed, each a user with the role it has. One leader in the middle of the network
 * is the caller. Prints, as one JSON line: the whoami URL, the agents URLs (the leader's first
 * page and last page, with and without `q`), the leader's token (for both routes) and what the
 * leader sees.
 */
const ORG = DEMO.organizations.demo.id;
const AGENTS = 100_000;
const SHAPE = { leaders: 20, managersPerLeader: 10, agentsPerManager: 499, idPrefix: 'b3e70018' } as const;
/** Which of the generated leaders calls (counted from 0): one in the middle of the name range. */
const LEADER = 7;
/** The page size measured: the API's default. */
const PAGE_SIZE = 20;
/**
 * The search measured: "Amani Chege …" and "Imani Chege …", about 2 % of every leader's agents
 * (the generator's names cycle ten first names and ten last names).
 */
const SEARCH = 'ni Ch';

export interface AgentsBenchInfo {
  whoami: string;
  /** The leader's bearer token, for both routes. */
  token: string;
  /** GET /v1/agents (the leader's first page), and the same with `q`. */
  agents: string;
  search: string;
  /** The leader's last page (`after` the row before the last PAGE_SIZE), and the same with `q`. */
  agentsLast: string;
  searchLast: string;
  q: string;
  size: number;
  leader: { userId: string; name: string };
  /** Agents in the organization (the demo network too), the leader's (its managers and theirs), those `q` matches. */
  organizationAgents: number;
  /** The generated network's agents (AGENTS). */
  networkAgents: number;
  visible: number;
  matching: number;
}

/** The API's cursor (api/agents/agents.ts): base64url of the JSON [name, user_id] of a page's end. */
const cursor = (row: { name: string; user_id: string }) =>
  Buffer.from(JSON.stringify([row.name, row.user_id])).toString('base64url');

async function main(cleanups: Cleanups) {
  const base = loadConfig({ ...process.env, LOG_LEVEL: 'info' });
  const databaseUrl = await benchDatabase(base.DATABASE_URL, cleanups);
  const dev = await startDevelopmentProviders(base);
  cleanups.push(() => dev.close());
  const config = { ...dev.config, DATABASE_URL: databaseUrl };
  const db = createDb(databaseUrl, config.DATABASE_POOL_MAX);
  cleanups.push(() => db.destroy());
  await migrate(db);
  await seedDemoData(db, dev.seedOptions);

  // The generated network, its e-mails moved to a domain of their own (the demo's small network
  // in the same organization has the same generator's addresses, and e-mails are unique).
  const generated = agentNetwork(ORG, SHAPE).slice(0, AGENTS);
  const network = generated.map((a) => ({ ...a, email: a.email.replace('@', '@bench.') }));
  const leader = network.filter((a) => a.role === 'LEADER')[LEADER]!;
  const seeded = performance.now();
  await db.transaction((trx) => seedAgentNetwork(trx, ORG, network));
  // As autovacuum leaves a table that has settled (visibility map set, statistics current).
  for (const table of ['users', 'user_access', 'agents', 'agent_hierarchy']) await db.raw(`vacuum analyze ${table}`);
  const seconds = ((performance.now() - seeded) / 1000).toFixed(1);

  const origin = await listenLocal(await benchService(config, db));

  // What the leader sees (its managers and their agents, as GET /v1/agents without scope), in the
  // list's order, from the end: the last page is what follows the row before the last PAGE_SIZE.
  const visibleTo = (q?: string) => {
    const rows = db('agents as a')
      .join('agent_hierarchy as h', function () {
        this.on('h.descendant_user_id', 'a.user_id').andOn('h.organization_id', 'a.organization_id');
      })
      .where({ 'h.ancestor_user_id': leader.user_id, 'a.organization_id': ORG })
      .where('h.depth', '>=', 1);
    if (q) rows.whereRaw(`a.search like lower(?)`, [`%${q}%`]);
    return rows;
  };
  const beforeLast = async (q?: string) => {
    const row = (await visibleTo(q)
      .orderBy([
        { column: 'a.name', order: 'desc' },
        { column: 'a.user_id', order: 'desc' },
      ])
      .offset(PAGE_SIZE)
      .first('a.name', 'a.user_id')) as { name: string; user_id: string } | undefined;
    if (!row) throw new Error(`the leader sees no more than one page${q ? ` matching ${q}` : ''}`);
    return cursor(row);
  };
  const count = async (q?: string) => Number(((await visibleTo(q).count('* as n').first()) as { n: string }).n);
  const url = (params: Record<string, string>) =>
    `${origin}/v1/agents?${new URLSearchParams({ size: String(PAGE_SIZE), ...params })}`;

  const info: AgentsBenchInfo = {
    whoami: `${origin}/v1/auth/whoami`,
    token: await requestToken(dev.idp.url, 'backend', {
      sub: leader.user_id,
      aud: config.AUTH_AUDIENCE,
    }),
    agents: url({}),
    search: url({ q: SEARCH }),
    agentsLast: url({ after: await beforeLast() }),
    searchLast: url({ q: SEARCH, after: await beforeLast(SEARCH) }),
    q: SEARCH,
    size: PAGE_SIZE,
    leader: { userId: leader.user_id, name: leader.name },
    organizationAgents: Number(
      ((await db('agents').where({ organization_id: ORG }).count('* as n').first()) as { n: string }).n,
    ),
    networkAgents: network.length,
    visible: await count(),
    matching: await count(SEARCH),
  };
  console.error(`(agents server: ${network.length} agents written and vacuumed in ${seconds} s)`);
  console.log(JSON.stringify(info));
}

runBenchServer(main);

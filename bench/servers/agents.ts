import { loadConfig } from '../../config';
import { createDb, migrate } from '../../db/knex';
import { DEMO, seedDemoData } from '../../db/seeds/demo';
import { startDevelopmentProviders } from '../../dev/simulators';
import { requestToken } from '../../simulators/identity';
import { benchDatabase } from '../database';
import { leaderView, seedBenchAgents } from '../seed-agents';
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

  const seeded = performance.now();
  const { network, leader } = await seedBenchAgents(db, AGENTS);
  const seconds = ((performance.now() - seeded) / 1000).toFixed(1);

  const origin = await listenLocal(await benchService(config, db));

  const all = await leaderView(db, leader.user_id, PAGE_SIZE);
  const matching = await leaderView(db, leader.user_id, PAGE_SIZE, SEARCH);
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
    agentsLast: url({ after: all.lastPageAfter }),
    searchLast: url({ q: SEARCH, after: matching.lastPageAfter }),
    q: SEARCH,
    size: PAGE_SIZE,
    leader: { userId: leader.user_id, name: leader.name },
    organizationAgents: Number(
      ((await db('agents').where({ organization_id: ORG }).count('* as n').first()) as { n: string }).n,
    ),
    networkAgents: network.length,
    visible: all.visible,
    matching: matching.visible,
  };
  console.error(`(agents server: ${network.length} agents written and vacuumed in ${seconds} s)`);
  console.log(JSON.stringify(info));
}

runBenchServer(main);

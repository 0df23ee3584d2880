import type { Knex } from 'knex';
import { DEMO } from '../db/seeds/demo';
import { agentNetwork, type SeedAgent, seedAgentNetwork } from '../db/seeds/agents';

const ORG = DEMO.organizations.demo.id;
/**
 * 20 leaders with 10 managers each and the rest agents, about 500 per manager (the generator's 499
 * each, less the last manager's last ones when cut to a round number).
 */
const SHAPE = { leaders: 20, managersPerLeader: 10, agentsPerManager: 499, idPrefix: 'b3e70018' } as const;
/** Which of the generated leaders calls (counted from 0): one in the middle of the name range. */
const LEADER = 7;

/**
 * The benchmarks' agent network in the demo organization: `agents` agents written in bulk by the
 * seed, each a user with the role it has, then vacuumed as autovacuum leaves a table that has
 * settled (visibility map set, statistics current). Returns the network and the leader who calls.
 */
export async function seedBenchAgents(db: Knex, agents: number): Promise<{ network: SeedAgent[]; leader: SeedAgent }> {
  // The generated network, its e-mails moved to a domain of their own (the demo's small network
  // in the same organization has the same generator's addresses, and e-mails are unique).
  const generated = agentNetwork(ORG, SHAPE).slice(0, agents);
  const network = generated.map((a) => ({ ...a, email: a.email.replace('@', '@bench.') }));
  const leader = network.filter((a) => a.role === 'LEADER')[LEADER]!;
  await db.transaction((trx) => seedAgentNetwork(trx, ORG, network));
  for (const table of ['users', 'user_access', 'agents', 'agent_hierarchy']) await db.raw(`vacuum analyze ${table}`);
  return { network, leader };
}

/** The API's cursor (api/agents/agents.ts): base64url of the JSON [name, user_id] of a page's end. */
const cursor = (row: { name: string; user_id: string }) =>
  Buffer.from(JSON.stringify([row.name, row.user_id])).toString('base64url');

/**
 * What a leader sees (its managers and their agents, as GET /v1/agents without scope), matching
 * `q` when given: how many, and the cursor of its last page of `size` (what follows the row before
 * the last `size`, in the list's order).
 */
export async function leaderView(
  db: Knex,
  leaderUserId: string,
  size: number,
  q?: string,
): Promise<{ visible: number; lastPageAfter: string }> {
  const visible = () => {
    const rows = db('agents as a')
      .join('agent_hierarchy as h', function () {
        this.on('h.descendant_user_id', 'a.user_id').andOn('h.organization_id', 'a.organization_id');
      })
      .where({ 'h.ancestor_user_id': leaderUserId, 'a.organization_id': ORG })
      .where('h.depth', '>=', 1);
    if (q) rows.whereRaw(`a.search like lower(?)`, [`%${q}%`]);
    return rows;
  };
  const row = (await visible()
    .orderBy([
      { column: 'a.name', order: 'desc' },
      { column: 'a.user_id', order: 'desc' },
    ])
    .offset(size)
    .first('a.name', 'a.user_id')) as { name: string; user_id: string } | undefined;
  if (!row) throw new Error(`the leader sees no more than one page${q ? ` matching ${q}` : ''}`);
  const { n } = (await visible().count('* as n').first()) as { n: string };
  return { visible: Number(n), lastPageAfter: cursor(row) };
}

import type { Knex } from 'knex';
import { addAgents, type AgentRole, type NewAgent } from '../agents/agents';

const FIRST = ['Amani', 'Baraka', 'Chausiku', 'Daudi', 'Esther', 'Faraji', 'Grace', 'Hamisi', 'Imani', 'Jabari'];
const LAST = ['Achieng', 'Barasa', 'Chege', 'Njoroge', 'Odhiambo', 'Wekesa', 'Mutua', 'Kiprop', 'Nyambura', 'Otieno'];
const TERRITORIES = ['Nairobi', 'Mombasa', 'Kisumu', 'Nakuru'];

/** A user who is also an agent, as the seed writes both. */
export interface SeedAgent extends NewAgent {
  organization_id: string;
}

/**
 * A deterministic agent network for one organization: `leaders` leaders, each with
 * `managersPerLeader` managers, each with `agentsPerManager` agents; ids from `idPrefix` (8 hex
 * digits) and the position, names and territories from small lists, so searches and filters find
 * a known share. `top` replaces the first leader, manager and agent (the demo's named users).
 */
export function agentNetwork(
  organizationId: string,
  shape: { leaders: number; managersPerLeader: number; agentsPerManager: number; idPrefix: string },
  top: Partial<Record<'leader' | 'manager' | 'agent', { id: string; name: string; email: string }>> = {},
): SeedAgent[] {
  let n = 0;
  const make = (role: AgentRole, supervisor: string | null): SeedAgent => {
    n += 1;
    const id = `${shape.idPrefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
    const name = `${FIRST[n % FIRST.length]} ${LAST[Math.floor(n / FIRST.length) % LAST.length]} ${n}`;
    return {
      organization_id: organizationId,
      user_id: id,
      role,
      name,
      email: `${role.toLowerCase()}${n}@${organizationId}.test`,
      phone_number: `+25411${n.toString().padStart(7, '0')}`,
      territory: TERRITORIES[n % TERRITORIES.length]!,
      status: n % 17 === 0 ? 'SUSPENDED' : n % 11 === 0 ? 'INACTIVE' : 'ACTIVE',
      supervisor_user_id: supervisor,
    };
  };
  const named = (agent: SeedAgent, user?: { id: string; name: string; email: string }): SeedAgent =>
    user ? { ...agent, user_id: user.id, name: user.name, email: user.email, status: 'ACTIVE' } : agent;
  const out: SeedAgent[] = [];
  for (let l = 0; l < shape.leaders; l += 1) {
    const leader = named(make('LEADER', null), l === 0 ? top.leader : undefined);
    out.push(leader);
    for (let m = 0; m < shape.managersPerLeader; m += 1) {
      const manager = named(make('MANAGER', leader.user_id), l === 0 && m === 0 ? top.manager : undefined);
      out.push(manager);
      for (let a = 0; a < shape.agentsPerManager; a += 1)
        out.push(named(make('AGENT', manager.user_id), l === 0 && m === 0 && a === 0 ? top.agent : undefined));
    }
  }
  return out;
}

/**
 * Seeds an agent network once (a network whose first agent is stored is kept): the users that are
 * not there yet and their roles, each table in one statement, then the agents with their hierarchy.
 */
export async function seedAgentNetwork(trx: Knex, organizationId: string, agents: readonly SeedAgent[]) {
  if (agents.length === 0 || (await trx('agents').where({ user_id: agents[0]!.user_id }).first('user_id'))) return;
  const rows = JSON.stringify(agents);
  await trx.raw(
    `insert into users (id, organization_id, email, name, phone_number)
     select user_id, ?, email, name, phone_number
       from json_to_recordset(?::json) as u(user_id uuid, email text, name text, phone_number text)
     on conflict (id) do nothing`,
    [organizationId, rows],
  );
  await trx.raw(
    `insert into user_access (user_id, organization_id, role)
     select user_id, ?, role from json_to_recordset(?::json) as u(user_id uuid, role text)
     on conflict (user_id, organization_id, role) do nothing`,
    [organizationId, rows],
  );
  await addAgents(
    trx,
    organizationId,
    agents.map(({ organization_id: _organization, ...agent }) => agent),
  );
}

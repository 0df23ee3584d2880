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
 * Seeds an organization's agent network once (an organization that has agents keeps them): the
 * users that are not there yet, their roles, and the agents with their hierarchy.
 */
export async function seedAgentNetwork(trx: Knex, organizationId: string, agents: readonly SeedAgent[]) {
  if (await trx('agents').where({ organization_id: organizationId }).first('user_id')) return;
  await trx('users')
    .insert(
      agents.map((a) => ({
        id: a.user_id,
        organization_id: organizationId,
        email: a.email,
        name: a.name,
        phone_number: a.phone_number ?? null,
      })),
    )
    .onConflict('id')
    .ignore();
  await trx('user_access')
    .insert(agents.map((a) => ({ user_id: a.user_id, organization_id: organizationId, role: a.role })))
    .onConflict(['user_id', 'organization_id', 'role'])
    .ignore();
  await addAgents(
    trx,
    organizationId,
    agents.map(({ organization_id: _organization, ...agent }) => agent),
  );
}

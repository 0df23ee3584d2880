import type { Knex } from 'knex';

export const AGENT_ROLES = ['AGENT', 'MANAGER', 'LEADER'] as const;
export type AgentRole = (typeof AGENT_ROLES)[number];
export const AGENT_STATUSES = ['ACTIVE', 'INACTIVE', 'SUSPENDED'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export interface AgentRow {
  user_id: string;
  organization_id: string;
  role: AgentRole;
  status: AgentStatus;
  territory: string | null;
  name: string;
  email: string;
  phone_number: string | null;
  supervisor_user_id: string | null;
  created_at: Date;
}

export type NewAgent = Pick<AgentRow, 'user_id' | 'role' | 'name' | 'email'> &
  Partial<Pick<AgentRow, 'status' | 'territory' | 'phone_number' | 'supervisor_user_id'>>;

/**
 * Adds agents to the organization's hierarchy, each after its supervisor (given in that order):
 * its row, and its closure rows: itself at depth 0, and one per ancestor of its supervisor.
 */
export async function addAgents(db: Knex, organizationId: string, agents: readonly NewAgent[]): Promise<void> {
  for (const agent of agents) {
    await db('agents').insert({ ...agent, organization_id: organizationId });
    await db.raw(
      `insert into agent_hierarchy (organization_id, ancestor_user_id, descendant_user_id, depth)
       select ?, ?::uuid, ?::uuid, 0
       union all
       select organization_id, ancestor_user_id, ?::uuid, depth + 1 from agent_hierarchy
        where organization_id = ? and descendant_user_id = ?::uuid`,
      [organizationId, agent.user_id, agent.user_id, agent.user_id, organizationId, agent.supervisor_user_id ?? null],
    );
  }
}

/** Who is looking: everyone in the organization (an admin), or the caller's own subtree. */
export type AgentViewer = { kind: 'ORGANIZATION' } | { kind: 'SUBTREE'; userId: string; includeSelf: boolean };

export interface AgentFilters {
  role?: AgentRole;
  status?: AgentStatus;
  territory?: string;
  /** Part of a name or e-mail, any case. */
  q?: string;
}

/** A keyset position in name order: the name and the user id of a page's end. */
export interface AgentPosition {
  name: string;
  userId: string;
}

export interface AgentPage {
  rows: AgentRow[];
  /** Whether rows lie past the page's last, and before its first. */
  more: boolean;
  less: boolean;
}

const COLUMNS = [
  'a.user_id',
  'a.organization_id',
  'a.role',
  'a.status',
  'a.territory',
  'a.name',
  'a.email',
  'a.phone_number',
  'a.supervisor_user_id',
  'a.created_at',
];

/** `%`, `_` and `\` taken literally in an ILIKE pattern. */
const literal = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * One page of the agents `viewer` may see, in name order, filtered. The visibility rule is in the
 * query (a join on the closure table from the viewer), never applied to rows after reading them.
 */
export async function listAgents(
  db: Knex,
  organizationId: string,
  viewer: AgentViewer,
  filters: AgentFilters,
  page: { size: number; after?: AgentPosition; before?: AgentPosition },
): Promise<AgentPage> {
  const base = () => {
    const q = db('agents as a').where('a.organization_id', organizationId);
    if (viewer.kind === 'SUBTREE')
      q.join('agent_hierarchy as h', function () {
        this.on('h.descendant_user_id', 'a.user_id')
          .andOn('h.organization_id', 'a.organization_id')
          .andOnVal('h.ancestor_user_id', viewer.userId)
          .andOnVal('h.depth', '>=', viewer.includeSelf ? 0 : 1);
      });
    if (filters.role) q.where('a.role', filters.role);
    if (filters.status) q.where('a.status', filters.status);
    if (filters.territory) q.where('a.territory', filters.territory);
    if (filters.q) q.whereRaw(`(a.name || ' ' || a.email) ilike ?`, [`%${literal(filters.q)}%`]);
    return q;
  };
  const towardsStart = page.before !== undefined;
  const q = base();
  const position = page.after ?? page.before;
  if (position) q.whereRaw(`(a.name, a.user_id) ${towardsStart ? '<' : '>'} (?, ?)`, [position.name, position.userId]);
  const order = towardsStart ? 'desc' : 'asc';
  const fetched: AgentRow[] = await q
    .select(COLUMNS)
    .orderBy([
      { column: 'a.name', order },
      { column: 'a.user_id', order },
    ])
    .limit(page.size + 1);
  const beyond = fetched.length > page.size;
  const rows = fetched.slice(0, page.size);
  if (towardsStart) rows.reverse();
  // Paging towards the end, rows lie before the page when it began after a position (and the
  // other way round): a cursor is only ever given out for a row that was there.
  return towardsStart
    ? { rows, more: rows.length > 0, less: beyond }
    : { rows, more: beyond, less: position !== undefined && rows.length > 0 };
}

/** An agent of the organization, or undefined. */
export function findAgent(db: Knex, organizationId: string, userId: string): Promise<AgentRow | undefined> {
  return db('agents as a').where({ 'a.organization_id': organizationId, 'a.user_id': userId }).first(COLUMNS);
}

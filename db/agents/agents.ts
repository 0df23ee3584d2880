import type { Knex } from 'knex';
import { preparedRows } from '../prepared';

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
}

export type NewAgent = Pick<AgentRow, 'user_id' | 'role' | 'name' | 'email'> &
  Partial<Pick<AgentRow, 'status' | 'territory' | 'phone_number' | 'supervisor_user_id'>>;

/** Closure rows written per statement: a JSON document of a few megabytes each. */
const CLOSURE_CHUNK = 20_000;

/**
 * Adds agents to the organization's hierarchy in bulk, each supervisor before those it supervises
 * (in this batch or already stored): the agents' rows, then their closure rows (each agent at
 * depth 0 and once per ancestor of its supervisor, with the agent's name and e-mail), each table
 * from one JSON document per statement, so a network of any size takes a few statements.
 */
export async function addAgents(db: Knex, organizationId: string, agents: readonly NewAgent[]): Promise<void> {
  if (agents.length === 0) return;
  await db.raw(
    `insert into agents (user_id, organization_id, role, status, territory, name, email, phone_number, supervisor_user_id)
     select user_id, ?, role, coalesce(status, 'ACTIVE'), territory, name, email, phone_number, supervisor_user_id
       from json_to_recordset(?::json) as a(user_id uuid, role text, status text, territory text, name text,
                                             email text, phone_number text, supervisor_user_id uuid)`,
    [organizationId, JSON.stringify(agents)],
  );
  const batch = new Map(agents.map((a) => [a.user_id, a]));
  const stored = new Map<string, { ancestor_user_id: string; depth: number }[]>();
  const outside = [...new Set(agents.map((a) => a.supervisor_user_id))].filter(
    (id): id is string => !!id && !batch.has(id),
  );
  if (outside.length > 0)
    for (const row of await db('agent_hierarchy')
      .where({ organization_id: organizationId })
      .whereIn('descendant_user_id', outside)
      .select('descendant_user_id', 'ancestor_user_id', 'depth'))
      stored.set(row.descendant_user_id, [...(stored.get(row.descendant_user_id) ?? []), row]);
  const ancestries = new Map<string, { ancestor_user_id: string; depth: number }[]>();
  const ancestry = (id: string): { ancestor_user_id: string; depth: number }[] => {
    const agent = batch.get(id);
    if (!agent) return stored.get(id) ?? [];
    let known = ancestries.get(id);
    if (!known) {
      const above = agent.supervisor_user_id ? ancestry(agent.supervisor_user_id) : [];
      known = [{ ancestor_user_id: id, depth: 0 }, ...above.map((a) => ({ ...a, depth: a.depth + 1 }))];
      ancestries.set(id, known);
    }
    return known;
  };
  const closure = agents.flatMap((agent) =>
    ancestry(agent.user_id).map((a) => ({
      ...a,
      descendant_user_id: agent.user_id,
      name: agent.name,
      email: agent.email,
    })),
  );
  // Each closure row copies its agent's name and search text (the list's order and search) from
  // the row just written, the one source of both.
  for (let i = 0; i < closure.length; i += CLOSURE_CHUNK)
    await db.raw(
      `insert into agent_hierarchy
         (organization_id, ancestor_user_id, descendant_user_id, depth, descendant_name, descendant_search)
       select a.organization_id, h.ancestor_user_id, h.descendant_user_id, h.depth, a.name, a.search
         from json_to_recordset(?::json) as h(ancestor_user_id uuid, descendant_user_id uuid, depth int)
         join agents a on a.user_id = h.descendant_user_id and a.organization_id = ?`,
      [JSON.stringify(closure.slice(i, i + CLOSURE_CHUNK)), organizationId],
    );
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

export interface AgentPageText {
  /** Whether the caller may list (an admin, or an ACTIVE agent); nothing was read otherwise. */
  allowed: boolean;
  /** The page's agents in name order: the JSON text of the API's Agent objects. */
  data: string;
  /** The page's first and last agent in name order (none on an empty page). */
  first?: AgentPosition;
  last?: AgentPosition;
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
];

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
const literal = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

export interface AgentPageRequest {
  size: number;
  after?: AgentPosition;
  before?: AgentPosition;
}

/**
 * The query for one page of the agents `viewer` may see, in name order (or its reverse, towards
 * `before`), filtered, one row more than the page. The visibility rule is in the query (a join on
 * the closure table from the viewer), never applied to rows after reading them.
 */
export function agentsQuery(
  db: Knex,
  organizationId: string,
  viewer: AgentViewer,
  filters: AgentFilters,
  page: AgentPageRequest,
): Knex.QueryBuilder {
  // Under a viewer, the closure rows drive the query: their copies of the name and e-mail are the
  // order, the keyset and the search (one index range each, see the agent_hierarchy_list migration).
  const [name, id, searched] =
    viewer.kind === 'SUBTREE'
      ? ['h.descendant_name', 'h.descendant_user_id', 'h.descendant_search']
      : ['a.name', 'a.user_id', 'a.search'];
  const q =
    viewer.kind === 'SUBTREE'
      ? db('agent_hierarchy as h')
          .join('agents as a', function () {
            this.on('a.user_id', 'h.descendant_user_id').andOn('a.organization_id', 'h.organization_id');
          })
          .where({ 'h.organization_id': organizationId, 'h.ancestor_user_id': viewer.userId })
          .where('h.depth', '>=', viewer.includeSelf ? 0 : 1)
      : db('agents as a').where('a.organization_id', organizationId);
  if (filters.role) q.where('a.role', filters.role);
  if (filters.status) q.where('a.status', filters.status);
  if (filters.territory) q.where('a.territory', filters.territory);
  // The search text is stored folded by lower(); the pattern is folded the same way, in Postgres.
  if (filters.q) q.whereRaw(`${searched} like lower(?)`, [`%${literal(filters.q)}%`]);
  const towardsStart = page.before !== undefined;
  const position = page.after ?? page.before;
  if (position) q.whereRaw(`(${name}, ${id}) ${towardsStart ? '<' : '>'} (?, ?)`, [position.name, position.userId]);
  const order = towardsStart ? 'desc' : 'asc';
  return q
    .select(COLUMNS)
    .orderBy([
      { column: name, order },
      { column: id, order },
    ])
    .limit(page.size + 1);
}

/**
 * One page of the agents `viewer` may see (agentsQuery), in one statement: Postgres writes the
 * page's JSON (the API's Agent objects, in name order) and the ends its links start from, so the
 * API passes the text on instead of parsing rows and serialising them again. `asAgent` (a caller
 * who is no admin) must be an ACTIVE agent of the organization: otherwise nothing is read and the
 * page says `allowed: false`.
 */
export async function agentPage(
  db: Knex,
  organizationId: string,
  viewer: AgentViewer,
  filters: AgentFilters,
  page: AgentPageRequest,
  asAgent?: string,
): Promise<AgentPageText> {
  const fetched = agentsQuery(db, organizationId, viewer, filters, page).whereRaw('(select allowed from me)');
  const towardsStart = page.before !== undefined;
  const order = towardsStart ? 'desc' : 'asc';
  const gate = asAgent
    ? db('agents').where({ organization_id: organizationId, user_id: asAgent, status: 'ACTIVE' }).select(db.raw('1'))
    : undefined;
  const statement = db.raw(
    `with me as (select ${gate ? 'exists(?)' : 'true'} as allowed),
       fetched as (?),
       kept as (select f.*, row_number() over (order by f.name ${order}, f.user_id ${order}) as k from fetched f),
       shown as (select user_id, name, email, phone_number, role, status, territory, supervisor_user_id,
                        'agt_' || replace(user_id::text, '-', '') as resource_id
                   from kept where k <= ?)
     select (select allowed from me) as allowed,
            (select count(*)::int from fetched) as fetched,
            coalesce((select '[' || string_agg(row_to_json(v)::text, ',' order by v.name, v.user_id) || ']'
                        from shown v), '[]') as data,
            (select json_build_array(name, user_id) from shown order by name, user_id limit 1) as first,
            (select json_build_array(name, user_id) from shown order by name desc, user_id desc limit 1) as last`,
    [...(gate ? [gate] : []), fetched, page.size],
  );
  // Prepared (planned once per connection) unless the best plan hangs on the search pattern: an
  // admin's search is either a trigram lookup (a rare pattern) or a walk of the organization in
  // name order (a common one). Under a viewer both are bounded by the viewer's own rows.
  const planEachTime = filters.q !== undefined && viewer.kind === 'ORGANIZATION';
  const [row] = planEachTime
    ? ((await statement) as { rows: PageRow[] }).rows
    : await preparedRows<PageRow>(db, statement);
  const { allowed, data } = row!;
  const shown = Math.min(row!.fetched, page.size);
  const end = (pair: [string, string] | null) => (pair ? { name: pair[0], userId: pair[1] } : undefined);
  const ends = { first: end(row!.first), last: end(row!.last) };
  const beyond = row!.fetched > page.size;
  // Paging towards the end, rows lie before the page when it began after a position (and the
  // other way round): a cursor is only ever given out for a row that was there.
  return towardsStart
    ? { allowed, data, ...ends, more: shown > 0, less: beyond }
    : { allowed, data, ...ends, more: beyond, less: page.after !== undefined && shown > 0 };
}

interface PageRow {
  allowed: boolean;
  fetched: number;
  data: string;
  first: [string, string] | null;
  last: [string, string] | null;
}

/** An agent of the organization, or undefined. */
export function findAgent(db: Knex, organizationId: string, userId: string): Promise<AgentRow | undefined> {
  return db('agents as a').where({ 'a.organization_id': organizationId, 'a.user_id': userId }).first(COLUMNS);
}

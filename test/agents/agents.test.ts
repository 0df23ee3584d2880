import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { AGENT_NETWORKS, DEMO } from '../../db/seeds/demo';
import { type AgentFilters, type AgentPageRequest, type AgentViewer, agentsQuery } from '../../db/agents/agents';
import { agentNetwork, type SeedAgent, seedAgentNetwork } from '../../db/seeds/agents';
import { harness } from '../support/harness';
import { call, type Reply } from '../support/http';
import { backendToken, bearer } from '../support/tokens';

const DEMO_ORG = DEMO.organizations.demo.id;
const network: readonly SeedAgent[] = AGENT_NETWORKS[DEMO_ORG]!;
const byId = new Map(network.map((a) => [a.user_id, a]));
const leaders = network.filter((a) => a.role === 'LEADER');
const managers = network.filter((a) => a.role === 'MANAGER');

/** Everyone under `userId` in the seeded network (not itself): the expectation, from the seed's supervisor links. */
function under(userId: string): Set<string> {
  const out = new Set<string>();
  for (const agent of network) {
    for (let up = agent.supervisor_user_id; up; up = byId.get(up)?.supervisor_user_id ?? null)
      if (up === userId) out.add(agent.user_id);
  }
  return out;
}
const everyone = new Set(network.map((a) => a.user_id));
const withSelf = (userId: string) => new Set([userId, ...under(userId)]);

/** Every page of GET /v1/agents for `headers`, following links.next. */
async function listAll(headers: Record<string, string>, query = ''): Promise<{ ids: string[]; first: Reply }> {
  const ids: string[] = [];
  let path: string | null = `/v1/agents?size=100${query}`;
  let first: Reply | undefined;
  while (path) {
    const reply = await call('GET', path, { headers });
    first ??= reply;
    if (reply.status !== 200) return { ids, first };
    ids.push(...reply.body.data.map((a: { user_id: string }) => a.user_id));
    path = reply.body.links.next;
  }
  return { ids, first: first! };
}

const sorted = (ids: Iterable<string>) => [...ids].sort();

describe('spec 4.6: GET /v1/agents (visibility through the hierarchy)', () => {
  let foreignAdmin: string;
  before(async () => {
    // Another organization's admin, to show an admin sees only its own organization.
    foreignAdmin = randomUUID();
    const { db } = harness();
    await db('users').insert({
      id: foreignAdmin,
      organization_id: DEMO.organizations.second.id,
      email: `admin-${foreignAdmin}@second-lender.test`,
      name: 'Second Admin',
    });
    await db('user_access').insert({
      user_id: foreignAdmin,
      organization_id: DEMO.organizations.second.id,
      role: 'ADMIN',
    });
  });

  it('the visibility matrix: each caller sees exactly the agents the rule gives it, with and without scope=OWN', async () => {
    const secondNetwork = AGENT_NETWORKS[DEMO.organizations.second.id]!;
    // One table: caller → what it sees without a scope, and with scope=OWN (a set, or a status refused).
    const table: { caller: string; userId: () => string; sees: Set<string> | number; own: Set<string> | number }[] = [
      { caller: 'agent', userId: () => DEMO.users.agent.id, sees: new Set(), own: new Set([DEMO.users.agent.id]) },
      {
        caller: 'manager',
        userId: () => DEMO.users.manager.id,
        sees: under(DEMO.users.manager.id),
        own: withSelf(DEMO.users.manager.id),
      },
      {
        caller: 'other manager',
        userId: () => managers[1]!.user_id,
        sees: under(managers[1]!.user_id),
        own: withSelf(managers[1]!.user_id),
      },
      {
        caller: 'leader',
        userId: () => DEMO.users.leader.id,
        sees: under(DEMO.users.leader.id),
        own: withSelf(DEMO.users.leader.id),
      },
      {
        caller: 'other leader',
        userId: () => leaders[1]!.user_id,
        sees: under(leaders[1]!.user_id),
        own: withSelf(leaders[1]!.user_id),
      },
      // An admin is not in the hierarchy: everyone in its organization; with OWN, itself only (not an agent: nobody).
      { caller: 'admin', userId: () => DEMO.users.admin.id, sees: everyone, own: new Set() },
      { caller: 'customer', userId: () => DEMO.users.customer.id, sees: 403, own: 403 },
      {
        caller: 'another organization’s admin',
        userId: () => foreignAdmin,
        sees: new Set(secondNetwork.map((a) => a.user_id)),
        own: new Set(),
      },
    ];
    for (const row of table) {
      const headers = bearer(await backendToken(row.userId()));
      for (const [query, expected] of [
        ['', row.sees],
        ['&scope=OWN', row.own],
      ] as const) {
        const { ids, first } = await listAll(headers, query);
        if (typeof expected === 'number') {
          assert.equal(first.status, expected, `${row.caller}${query}`);
          continue;
        }
        assert.equal(first.status, 200, `${row.caller}${query}: ${first.text}`);
        assert.deepEqual(sorted(ids), sorted(expected), `${row.caller}${query}`);
      }
    }
    // The checks the matrix implies, said plainly.
    const agentView = await listAll(bearer(await backendToken(DEMO.users.agent.id)));
    assert.equal(agentView.ids.length, 0, 'an agent never sees a peer');
    const managerView = new Set((await listAll(bearer(await backendToken(DEMO.users.manager.id)))).ids);
    for (const id of under(managers[1]!.user_id))
      assert.ok(!managerView.has(id), 'a manager never sees another manager’s agents');
  });

  it('only ACTIVE agents act as agents: a SUSPENDED or INACTIVE one is 403 on every agent route, its subtree still visible above it', async () => {
    const suspended = managers.find((a) => a.status === 'SUSPENDED')!;
    const inactive = network.find((a) => a.role === 'AGENT' && a.status === 'INACTIVE')!;
    const above = suspended.supervisor_user_id!;
    const ownAgent = network.find((a) => a.supervisor_user_id === suspended.user_id)!.user_id;
    const customer = randomUUID();
    const { db } = harness();
    await db('users').insert({ id: customer, organization_id: DEMO_ORG, email: `c-${customer}@demo.test`, name: 'C' });
    await db('user_access').insert({ user_id: customer, organization_id: DEMO_ORG, role: 'CUSTOMER' });
    for (const who of [suspended, inactive]) {
      const headers = bearer(await backendToken(who.user_id));
      const refusals = [
        await call('GET', '/v1/agents', { headers }),
        await call('GET', '/v1/agents?scope=OWN', { headers }),
        await call('GET', `/v1/agents/${who.user_id}/customers`, { headers }),
        await call('GET', `/v1/agents/${ownAgent}/customers`, { headers }),
        await call('POST', `/v1/agents/${ownAgent}/customers`, { headers, json: { customer_user_id: customer } }),
        await call('POST', `/v1/agents/${ownAgent}/customers/${customer}/unassign`, { headers, json: { reason: 'x' } }),
      ];
      for (const reply of refusals) {
        assert.equal(reply.status, 403, `${who.status} ${who.role}: ${reply.text}`);
        assert.match(reply.body.description, /Only an ACTIVE agent/, reply.text);
      }
    }
    assert.equal((await db('agent_assignments').where({ customer_user_id: customer })).length, 0, 'nothing assigned');
    // Those above see the suspended manager's subtree and act on it.
    const leader = bearer(await backendToken(above));
    const seen = new Set((await listAll(leader)).ids);
    for (const id of withSelf(suspended.user_id)) assert.ok(seen.has(id), 'the subtree stays visible above it');
    const assigned = await call('POST', `/v1/agents/${ownAgent}/customers`, {
      headers: leader,
      json: { customer_user_id: customer },
    });
    assert.equal(assigned.status, 201, assigned.text);
    const admin = await listAll(bearer(await backendToken(DEMO.users.admin.id)), '&status=SUSPENDED');
    assert.ok(admin.ids.includes(suspended.user_id), 'admins list them');
  });

  it('filters role, status, territory and q (part of a name or an e-mail, any case), alone and combined', async () => {
    const headers = bearer(await backendToken(DEMO.users.admin.id));
    const expect = (predicate: (a: SeedAgent) => boolean) => sorted(network.filter(predicate).map((a) => a.user_id));
    const cases: [string, (a: SeedAgent) => boolean][] = [
      ['&role=MANAGER', (a) => a.role === 'MANAGER'],
      ['&status=SUSPENDED', (a) => a.status === 'SUSPENDED'],
      ['&territory=Kisumu', (a) => a.territory === 'Kisumu'],
      ['&role=AGENT&territory=Nairobi', (a) => a.role === 'AGENT' && a.territory === 'Nairobi'],
      [
        '&role=AGENT&status=ACTIVE&territory=Mombasa',
        (a) => a.role === 'AGENT' && a.status === 'ACTIVE' && a.territory === 'Mombasa',
      ],
      ['&q=CHEGE', (a) => a.name.toLowerCase().includes('chege') || a.email.includes('chege')],
      ['&q=manager1', (a) => `${a.name} ${a.email}`.toLowerCase().includes('manager1')],
      ['&q=halima', (a) => a.name.toLowerCase().includes('halima')],
      ['&q=sTHer&role=AGENT', (a) => a.role === 'AGENT' && a.name.toLowerCase().includes('sther')],
      ['&q=%25', () => false],
    ];
    for (const [query, predicate] of cases) {
      const { ids, first } = await listAll(headers, query);
      assert.equal(first.status, 200, `${query}: ${first.text}`);
      const expected = expect(predicate);
      if (query !== '&q=%25')
        assert.ok(expected.length > 0 && expected.length < network.length, `${query} selects some`);
      assert.deepEqual(sorted(ids), expected, query);
    }
    // Filters apply within what a caller may see, never beyond it.
    const leader = await listAll(bearer(await backendToken(DEMO.users.leader.id)), '&role=AGENT');
    const mine = under(DEMO.users.leader.id);
    assert.deepEqual(sorted(leader.ids), sorted([...mine].filter((id) => byId.get(id)!.role === 'AGENT')));
  });

  it('the list and its search are index scans at any page, a viewer’s bounded by the viewer (never a sequential scan, never a sort without q)', async () => {
    // A network large enough for the planner to choose as it would in production, written and
    // analyzed in a transaction that is rolled back.
    const { db } = harness();
    const plan = agentNetwork(DEMO_ORG, {
      leaders: 10,
      managersPerLeader: 10,
      agentsPerManager: 100,
      idPrefix: 'c0e70018',
    }).map((a) => ({ ...a, email: a.email.replace('@', '@plan.') }));
    const leader = plan.find((a) => a.role === 'LEADER')!.user_id;
    const trx = await db.transaction();
    try {
      await seedAgentNetwork(trx, DEMO_ORG, plan);
      await trx.raw('analyze agents');
      await trx.raw('analyze agent_hierarchy');
      const explain = async (viewer: AgentViewer, filters: AgentFilters, page: AgentPageRequest = { size: 20 }) => {
        const { rows } = await trx.raw(`explain ${agentsQuery(trx, DEMO_ORG, viewer, filters, page).toString()}`);
        return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      };
      const last = { size: 20, after: { name: 'Jabari', userId: leader } };
      const cases: [string, AgentViewer, AgentFilters, AgentPageRequest | undefined, RegExp][] = [
        [
          'a leader, first page',
          { kind: 'SUBTREE', userId: leader, includeSelf: false },
          {},
          undefined,
          /agent_hierarchy_list/,
        ],
        [
          'a leader, a late page',
          { kind: 'SUBTREE', userId: leader, includeSelf: false },
          {},
          last,
          /agent_hierarchy_list/,
        ],
        [
          'a leader, scope=OWN',
          { kind: 'SUBTREE', userId: leader, includeSelf: true },
          {},
          undefined,
          /agent_hierarchy_list/,
        ],
        [
          'a leader, q',
          { kind: 'SUBTREE', userId: leader, includeSelf: false },
          { q: 'Imani Chege' },
          undefined,
          /agent_hierarchy_(search|list)/,
        ],
        [
          'a leader, q by e-mail',
          { kind: 'SUBTREE', userId: leader, includeSelf: false },
          { q: 'AGENT1234@' },
          undefined,
          /agent_hierarchy_(search|list)/,
        ],
        ['an admin, first page', { kind: 'ORGANIZATION' }, {}, undefined, /agents_organization_id_name_user_id_index/],
        ['an admin, a late page', { kind: 'ORGANIZATION' }, {}, last, /agents_organization_id_name_user_id_index/],
        [
          'an admin, q',
          { kind: 'ORGANIZATION' },
          { q: 'Imani Chege' },
          undefined,
          /agents_(search|organization_id_name)/,
        ],
      ];
      for (const [name, viewer, filters, page, index] of cases) {
        const text = await explain(viewer, filters, page);
        assert.match(text, index, `${name}:\n${text}`);
        // A viewer's rows are one index range on the viewer: its list, or its search.
        if (viewer.kind === 'SUBTREE') assert.match(text, /Index Cond: \(+ancestor_user_id = /, `${name}:\n${text}`);
        assert.doesNotMatch(text, /Seq Scan/, `${name}:\n${text}`);
        if (!filters.q) assert.doesNotMatch(text, /Sort/, `${name} reads its page in order:\n${text}`);
      }
      // A search may walk the viewer's ordered range, filtering it within the index (it stops at
      // a page), where the planner expects matches to be common; the trigram indexes serve the
      // search text either way.
      await trx.raw('set local enable_seqscan = off');
      const served = async (sql: string, bindings: string[]) =>
        (await trx.raw(`explain ${sql}`, bindings)).rows
          .map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'])
          .join('\n');
      assert.match(await served(`select user_id from agents where search like ?`, ['%1234%']), /agents_search/);
      assert.match(
        await served(
          `select descendant_user_id from agent_hierarchy
            where ancestor_user_id = ? and descendant_search like ?`,
          [leader, '%1234%'],
        ),
        /agent_hierarchy_search/,
      );
    } finally {
      await trx.rollback();
    }
  });

  it('a renamed agent is listed and searched under its new name by those above it (the closure’s copy follows by ON UPDATE CASCADE)', async () => {
    const { db } = harness();
    const agent = network.find((a) => a.role === 'AGENT' && a.supervisor_user_id)!;
    const manager = agent.supervisor_user_id!;
    const trx = await db.transaction();
    try {
      await trx('agents')
        .where({ user_id: agent.user_id })
        .update({ name: 'Zuhura Renamed', email: 'zuhura@renamed.test' });
      const copies = await trx('agent_hierarchy')
        .where({ descendant_user_id: agent.user_id })
        .select('descendant_name', 'descendant_search');
      assert.ok(copies.length >= 2);
      for (const copy of copies)
        assert.deepEqual(copy, {
          descendant_name: 'Zuhura Renamed',
          descendant_search: 'zuhura renamed zuhura@renamed.test',
        });
      const viewer: AgentViewer = { kind: 'SUBTREE', userId: manager, includeSelf: false };
      const found = await agentsQuery(trx, DEMO_ORG, viewer, { q: 'ZUHURA@RENAMED' }, { size: 20 });
      assert.deepEqual(
        found.map((a: { user_id: string }) => a.user_id),
        [agent.user_id],
      );
      const old = await agentsQuery(trx, DEMO_ORG, viewer, { q: agent.name }, { size: 20 });
      assert.equal(old.length, 0);
      const last = await agentsQuery(trx, DEMO_ORG, viewer, {}, { size: 100 });
      assert.equal(last.at(-1).user_id, agent.user_id, 'listed last, in its new name’s place');
    } finally {
      await trx.rollback();
    }
  });

  it('pages forward and backward in name order, links keeping the filters; size is 1 to 100, default 20', async () => {
    const headers = bearer(await backendToken(DEMO.users.admin.id));
    const all = await listAll(headers);
    const first = await call('GET', '/v1/agents', { headers });
    assert.equal(first.body.data.length, 20, 'default size 20');
    assert.equal(first.body.links.prev, null);
    const pages: string[][] = [];
    let path: string | null = '/v1/agents?size=7&role=AGENT';
    let last: Reply | undefined;
    while (path) {
      last = await call('GET', path, { headers });
      assert.equal(last.status, 200, last.text);
      assert.ok(last.body.data.length <= 7);
      pages.push(last.body.data.map((a: { user_id: string }) => a.user_id));
      path = last.body.links.next;
      if (path) assert.match(path, /role=AGENT/, 'links keep the filters');
    }
    const agentsInOrder = all.ids.filter((id) => byId.get(id)!.role === 'AGENT');
    assert.deepEqual(pages.flat(), agentsInOrder, 'forward pages: every agent once, in the list’s order');
    // Backward from the last page reaches the first, page by page.
    const back: string[][] = [];
    let prev: string | null = last!.body.links.prev;
    while (prev) {
      const reply = await call('GET', prev, { headers });
      assert.equal(reply.status, 200);
      back.unshift(reply.body.data.map((a: { user_id: string }) => a.user_id));
      prev = reply.body.links.prev;
    }
    assert.deepEqual([...back.flat(), ...pages.at(-1)!], agentsInOrder, 'backward pages: the same agents, in order');
    const names = first.body.data.map((a: { name: string }) => a.name);
    assert.deepEqual(
      names,
      [...names].sort((a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)),
      'name order',
    );
  });

  it('refuses what is not a list query (400 BAD_REQUEST, plain shape): size out of range, a foreign cursor, after and before together, unknown filters; 401 without a token', async () => {
    const headers = bearer(await backendToken(DEMO.users.admin.id));
    const bad = Buffer.from(JSON.stringify(['x', 'not-a-uuid'])).toString('base64url');
    for (const query of [
      'size=0',
      'size=101',
      'size=abc',
      `after=${bad}`,
      'before=%%%',
      'role=BOSS',
      'status=GONE',
      'scope=ALL',
      'colour=red',
      'territory=%01Nairobi',
      `q=${'x'.repeat(101)}`,
      `after=${Buffer.from(JSON.stringify(['a', randomUUID()])).toString('base64url')}&before=${Buffer.from(JSON.stringify(['b', randomUUID()])).toString('base64url')}`,
    ]) {
      const reply = await call('GET', `/v1/agents?${query}`, { headers });
      assert.equal(reply.status, 400, `${query}: ${reply.text}`);
      assert.equal(reply.body.code, 'BAD_REQUEST');
      assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'description'], 'the plain shape');
    }
    const anonymous = await call('GET', '/v1/agents');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.code, 'UNAUTHORISED');
  });
});

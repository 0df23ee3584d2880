import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { AGENT_NETWORKS, DEMO } from '../../db/seeds/demo';
import { buildApp } from '../../api/app';
import { startApi } from '../../api/server';
import { harness } from '../support/harness';
import { call, type Reply } from '../support/http';
import { backendToken, bearer } from '../support/tokens';

const DEMO_ORG = DEMO.organizations.demo.id;
const network = AGENT_NETWORKS[DEMO_ORG]!;
const managers = network.filter((a) => a.role === 'MANAGER');
const leaders = network.filter((a) => a.role === 'LEADER');
/** The demo agent (Juma), under the demo manager (Halima), under the demo leader (Peter). */
const agent = DEMO.users.agent.id;
const peer = network.find(
  (a) => a.role === 'AGENT' && a.supervisor_user_id === DEMO.users.manager.id && a.user_id !== agent,
)!.user_id;
const customersPath = (agentId: string) => `/v1/agents/${agentId}/customers`;
const as = async (userId: string) => bearer(await backendToken(userId));

/** A new customer of the demo organization. */
async function newCustomer(): Promise<string> {
  const id = randomUUID();
  await harness()
    .db('users')
    .insert({
      id,
      organization_id: DEMO_ORG,
      email: `customer-${id}@demo-lender.test`,
      name: `Customer ${id.slice(0, 8)}`,
    });
  await harness().db('user_access').insert({ user_id: id, organization_id: DEMO_ORG, role: 'CUSTOMER' });
  return id;
}

describe('spec 4.6: GET /v1/agents/{userId}/customers and assignments with history', () => {
  let foreignAdmin: string;
  before(async () => {
    foreignAdmin = randomUUID();
    const second = DEMO.organizations.second.id;
    await harness()
      .db('users')
      .insert({ id: foreignAdmin, organization_id: second, email: `admin-${foreignAdmin}@second.test`, name: 'Admin' });
    await harness().db('user_access').insert({ user_id: foreignAdmin, organization_id: second, role: 'ADMIN' });
  });

  it('an agent’s customers are visible to itself, the agents above it and the organization’s admins; anyone else is told there is no such agent', async () => {
    const customer = await newCustomer();
    const assigned = await call('POST', customersPath(agent), {
      headers: await as(DEMO.users.manager.id),
      json: { customer_user_id: customer, reason: 'Onboarded at the market' },
    });
    assert.equal(assigned.status, 201, assigned.text);
    const table: [string, string, number][] = [
      ['the agent itself', agent, 200],
      ['its manager', DEMO.users.manager.id, 200],
      ['its leader', DEMO.users.leader.id, 200],
      ['an admin', DEMO.users.admin.id, 200],
      ['a peer agent', peer, 404],
      ['another manager', managers[1]!.user_id, 404],
      ['another leader', leaders[1]!.user_id, 404],
      ['a customer', DEMO.users.customer.id, 403],
      ['another organization’s admin', foreignAdmin, 404],
    ];
    for (const [who, userId, status] of table) {
      const reply = await call('GET', customersPath(agent), { headers: await as(userId) });
      assert.equal(reply.status, status, `${who}: ${reply.text}`);
      if (status === 200)
        assert.ok(reply.body.some((a: { customer_user_id: string }) => a.customer_user_id === customer));
    }
    const unknown = await call('GET', customersPath(randomUUID()), { headers: await as(DEMO.users.admin.id) });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'NOT_FOUND');
  });

  it('reassigning ends the active assignment with who and why, and the history is kept: active first, then ended, newest first', async () => {
    const customer = await newCustomer();
    const manager = await as(DEMO.users.manager.id);
    const first = await call('POST', customersPath(agent), { headers: manager, json: { customer_user_id: customer } });
    assert.equal(first.status, 201);
    const again = await call('POST', customersPath(agent), { headers: manager, json: { customer_user_id: customer } });
    assert.equal(again.status, 200, 'already this agent’s customer: nothing changes');
    assert.equal(again.body.id, first.body.id);

    const moved = await call('POST', customersPath(peer), {
      headers: await as(DEMO.users.leader.id),
      json: { customer_user_id: customer, reason: 'Moved to a closer agent' },
    });
    assert.equal(moved.status, 201, moved.text);
    assert.deepEqual(
      [moved.body.agent_user_id, moved.body.is_active, moved.body.assigned_by, moved.body.assignment_reason],
      [peer, true, DEMO.users.leader.id, 'Moved to a closer agent'],
    );
    assert.match(moved.body.resource_id, /^asg_[0-9a-f]{32}$/);
    const current = await call('GET', customersPath(agent), { headers: manager });
    assert.ok(!current.body.some((a: { id: string }) => a.id === first.body.id), 'ended ones only when asked for');
    const history = await call('GET', `${customersPath(agent)}?history=true`, { headers: manager });
    const ended = history.body.find((a: { id: string }) => a.id === first.body.id);
    assert.deepEqual(
      [ended.is_active, ended.unassigned_by, ended.unassignment_reason, typeof ended.unassigned_at],
      [false, DEMO.users.leader.id, 'Moved to a closer agent', 'string'],
    );
    const actives = history.body.map((a: { is_active: boolean }) => a.is_active);
    assert.deepEqual(
      actives,
      [...actives].sort((a: boolean, b: boolean) => Number(b) - Number(a)),
      'active first',
    );

    const unassigned = await call('POST', `${customersPath(peer)}/${customer}/unassign`, {
      headers: await as(DEMO.users.admin.id),
      json: { reason: 'Customer moved away' },
    });
    assert.equal(unassigned.status, 200, unassigned.text);
    assert.deepEqual(
      [unassigned.body.is_active, unassigned.body.unassigned_by, unassigned.body.unassignment_reason],
      [false, DEMO.users.admin.id, 'Customer moved away'],
    );
    const twice = await call('POST', `${customersPath(peer)}/${customer}/unassign`, {
      headers: await as(DEMO.users.admin.id),
      json: { reason: 'Again' },
    });
    assert.equal(twice.status, 404, 'nothing active to end');
    const rows = await harness().db('agent_assignments').where({ customer_user_id: customer });
    assert.equal(rows.length, 2, 'every assignment kept');
    assert.equal(rows.filter((r) => r.is_active).length, 0);
  });

  it('at most one active assignment per customer, even under concurrent assignments to different agents', async () => {
    const customer = await newCustomer();
    const admin = await as(DEMO.users.admin.id);
    const targets = network.filter((a) => a.role === 'AGENT').slice(0, 6);
    const replies = await Promise.all(
      targets.map((t) =>
        call('POST', customersPath(t.user_id), { headers: admin, json: { customer_user_id: customer } }),
      ),
    );
    for (const reply of replies) assert.ok([200, 201].includes(reply.status), reply.text);
    const rows = await harness().db('agent_assignments').where({ customer_user_id: customer });
    assert.equal(rows.filter((r) => r.is_active).length, 1);
    assert.equal(rows.length, targets.length, 'each assignment made, all but the last ended');
  });

  it('who may assign: those above the agent and admins, not the agent itself (403); only the organization’s customers (404); reasons checked', async () => {
    const customer = await newCustomer();
    const self = await call('POST', customersPath(agent), {
      headers: await as(agent),
      json: { customer_user_id: customer },
    });
    assert.equal(self.status, 403);
    const byPeer = await call('POST', customersPath(agent), {
      headers: await as(peer),
      json: { customer_user_id: customer },
    });
    assert.equal(byPeer.status, 404);
    const manager = await as(DEMO.users.manager.id);
    for (const notACustomer of [DEMO.users.leader.id, randomUUID(), DEMO.users.secondCustomer.id]) {
      const reply = await call('POST', customersPath(agent), {
        headers: manager,
        json: { customer_user_id: notACustomer },
      });
      assert.equal(reply.status, 404, notACustomer);
    }
    for (const body of [
      {},
      { customer_user_id: 'x' },
      { customer_user_id: customer, reason: '' },
      { customer_user_id: customer, extra: 1 },
    ]) {
      const reply = await call('POST', customersPath(agent), { headers: manager, json: body });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.body.code, 'BAD_REQUEST');
    }
  });

  it('an agent moves customers only within its branch: one assigned in another branch is 409 and stays put; an admin moves it', async () => {
    const customer = await newCustomer();
    const otherManager = managers.find((m) => m.status === 'ACTIVE' && m.user_id !== DEMO.users.manager.id)!;
    const otherAgent = network.find((a) => a.supervisor_user_id === otherManager.user_id && a.status === 'ACTIVE')!;
    const first = await call('POST', customersPath(otherAgent.user_id), {
      headers: await as(otherManager.user_id),
      json: { customer_user_id: customer },
    });
    assert.equal(first.status, 201, first.text);
    // The demo manager may not take it from the other branch...
    const taken = await call('POST', customersPath(agent), {
      headers: await as(DEMO.users.manager.id),
      json: { customer_user_id: customer, reason: 'mine now' },
    });
    assert.equal(taken.status, 409, taken.text);
    assert.doesNotMatch(taken.text, new RegExp(otherAgent.user_id), 'the other branch is not named');
    const active = await harness().db('agent_assignments').where({ customer_user_id: customer, is_active: true });
    assert.deepEqual(
      active.map((r) => r.agent_user_id),
      [otherAgent.user_id],
      'the assignment stays',
    );
    // ...but moves it between its own agents, and an admin moves it anywhere.
    const moved = await call('POST', customersPath(agent), {
      headers: await as(DEMO.users.admin.id),
      json: { customer_user_id: customer, reason: 'branch merger' },
    });
    assert.equal(moved.status, 201, moved.text);
    const within = await call('POST', customersPath(peer), {
      headers: await as(DEMO.users.manager.id),
      json: { customer_user_id: customer },
    });
    assert.equal(within.status, 201, within.text);
  });

  it('spec 4.6 "Response: array of Agent assignment": without size the array holds every active assignment (past 20, no Link), ended ones only with history=true; past AGENT_CUSTOMERS_MAX it is 400 telling to page', async function () {
    this.timeout(60_000);
    const admin = await as(DEMO.users.admin.id);
    const target = network
      .filter((a) => a.role === 'AGENT' && a.user_id !== agent && a.user_id !== peer)
      .at(-1)!.user_id;
    const assigned: string[] = [];
    for (let i = 0; i < 25; i += 1) {
      const reply = await call('POST', customersPath(target), {
        headers: admin,
        json: { customer_user_id: await newCustomer() },
      });
      assert.equal(reply.status, 201, reply.text);
      assigned.push(reply.body.id);
    }
    const ended = await call(
      'POST',
      `${customersPath(target)}/${(await harness().db('agent_assignments').where({ id: assigned[0] }).first()).customer_user_id}/unassign`,
      {
        headers: admin,
        json: { reason: 'Moved away' },
      },
    );
    assert.equal(ended.status, 200, ended.text);
    const active = await harness()
      .db('agent_assignments')
      .where({ agent_user_id: target, is_active: true })
      .pluck('id');
    const every = await harness().db('agent_assignments').where({ agent_user_id: target }).pluck('id');

    const all = await call('GET', customersPath(target), { headers: admin });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.headers.get('link'), null, 'the whole list, unpaged');
    assert.deepEqual([...all.body.map((a: { id: string }) => a.id)].sort(), [...active].sort());
    assert.ok(all.body.length > 20 && all.body.every((a: { is_active: boolean }) => a.is_active));
    for (const id of assigned.slice(1)) assert.ok(all.body.some((a: { id: string }) => a.id === id));
    const withHistory = await call('GET', `${customersPath(target)}?history=true`, { headers: admin });
    assert.deepEqual([...withHistory.body.map((a: { id: string }) => a.id)].sort(), [...every].sort());
    const actives = withHistory.body.map((a: { is_active: boolean }) => a.is_active);
    assert.deepEqual(
      actives,
      [...actives].sort((a: boolean, b: boolean) => Number(b) - Number(a)),
      'active first',
    );

    // The bound, on an instance whose maximum is the agent's book less one, then exactly it.
    const { deps } = harness();
    for (const [most, status] of [
      [active.length - 1, 400],
      [active.length, 200],
    ] as const) {
      const api = await startApi(
        buildApp({ ...deps, config: { ...deps.config, AGENT_CUSTOMERS_MAX: most } }),
        '127.0.0.1',
        0,
      );
      try {
        const reply = await call('GET', customersPath(target), { headers: admin, baseUrl: api.url, contract: true });
        assert.equal(reply.status, status, reply.text);
        if (status === 400) {
          assert.equal(reply.body.code, 'BAD_REQUEST');
          assert.match(reply.body.description, new RegExp(`more than ${most} active assignments: page them with size`));
          const paged = await call('GET', `${customersPath(target)}?size=10`, { headers: admin, baseUrl: api.url });
          assert.equal(paged.status, 200);
          assert.equal(paged.body.length, 10);
          assert.match(paged.headers.get('link') ?? '', /rel="next"/);
        } else assert.equal(reply.body.length, active.length);
      } finally {
        await api.close();
      }
    }
  });

  it('spec 4.6: the answer is an array of Agent assignment; pages ride in the Link header (rel="next" and rel="prev", RFC 8288)', async () => {
    const manager = await as(DEMO.users.manager.id);
    const target = peer;
    for (let i = 0; i < 5; i += 1) {
      const reply = await call('POST', customersPath(target), {
        headers: manager,
        json: { customer_user_id: await newCustomer() },
      });
      assert.equal(reply.status, 201);
    }
    const all = await call('GET', `${customersPath(target)}?size=100&history=true`, { headers: manager });
    assert.ok(Array.isArray(all.body), 'a top-level JSON array');
    assert.equal(all.headers.get('link'), null, 'one page: no links');
    const linked = (reply: Reply, rel: string) => {
      const found = (reply.headers.get('link') ?? '').split(', ').find((l) => l.endsWith(`; rel="${rel}"`));
      return found ? /^<([^>]+)>/.exec(found)![1]! : null;
    };
    // Forward to the end by rel="next", then back to the start by rel="prev": every assignment once each way.
    const forward: string[] = [];
    let path: string | null = `${customersPath(target)}?size=2&history=true`;
    let last: Reply | undefined;
    while (path) {
      last = await call('GET', path, { headers: manager });
      assert.equal(last.status, 200, last.text);
      assert.ok(Array.isArray(last.body) && last.body.length <= 2);
      forward.push(...last.body.map((a: { id: string }) => a.id));
      path = linked(last, 'next');
    }
    assert.deepEqual(
      forward,
      all.body.map((a: { id: string }) => a.id),
    );
    const backward: string[] = [...last!.body.map((a: { id: string }) => a.id)];
    for (path = linked(last!, 'prev'); path; path = linked(last, 'prev')) {
      last = await call('GET', path, { headers: manager });
      assert.equal(last.status, 200, last.text);
      backward.unshift(...last.body.map((a: { id: string }) => a.id));
    }
    assert.deepEqual(backward, forward);
    assert.equal(linked(last!, 'prev'), null, 'no prev on the first page');
    const bad = await call('GET', `${customersPath(target)}?after=abc`, { headers: manager });
    assert.equal(bad.status, 400);
    const both = await call('GET', `${customersPath(target)}?after=abc&before=abc`, { headers: manager });
    assert.equal(both.status, 400);
  });
});

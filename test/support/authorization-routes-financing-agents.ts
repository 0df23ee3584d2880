import { requestExtraction } from '../../db/financing/invoices';
import {
  AGENT_ORGANIZATION,
  type AgentName,
  agentVisible,
  type Merchant,
  MERCHANT_ORGANIZATION,
} from './authorization-matrix';
import { db, type Exercise, type Fixture, type Instance, personSecrets, problem, row } from './authorization-exercise';
import type { Person, World } from './authorization-world';

// The matrix's exercises of the financing and agent routes (see authorization-exercise.ts).

// ---------------------------------------------------------------------------------------------
// Financing

const merchantTarget = (world: World, merchant: Merchant, extra: Partial<Instance> = {}): Instance => ({
  label: {
    own: 'the merchant',
    second: "the organization's second merchant",
    other: "the other organization's merchant",
  }[merchant],
  organization: MERCHANT_ORGANIZATION[merchant],
  merchant,
  ids: { merchantId: world.merchants[merchant] },
  secrets: [],
  ...extra,
});
const MERCHANTS: Merchant[] = ['own', 'second', 'other'];

const presign: Exercise = {
  prepare: async (world) => ({ targets: MERCHANTS.map((m) => merchantTarget(world, m)) }),
  request: ({ target }) => ({
    params: { merchantId: target!.ids.merchantId! },
    json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: 1_024 },
  }),
  rows: (target) => [
    { table: 'financing_documents', where: { merchant_id: target!.ids.merchantId! }, columns: ['id'] },
  ],
  async done({ target }, reply) {
    const document = await row('financing_documents', { id: reply.body.upload_ref });
    return problem(document?.merchant_id === target!.ids.merchantId, 'no document for the merchant');
  },
};
/** Each merchant's document (and invoice), and the own merchant's path naming the second merchant's. */
async function financingTargets(world: World, invoices: boolean): Promise<Fixture> {
  const made = Object.fromEntries(
    await Promise.all(
      MERCHANTS.map(async (m) => {
        const document = await world.documentOf(m, !invoices);
        if (!invoices) return [m, { document, invoice: '' }];
        const organizationId = world.organizations[MERCHANT_ORGANIZATION[m]];
        const { invoice } = await requestExtraction(
          db(),
          organizationId,
          world.merchants[m],
          document,
          'matrix',
          new Date(),
        );
        return [m, { document, invoice: invoice.id }];
      }),
    ),
  ) as Record<Merchant, { document: string; invoice: string }>;
  const ids = (m: Merchant) => ({ document: made[m].document, invoice: made[m].invoice });
  // A refused read of an invoice names nothing of it, its document included.
  const secrets = (m: Merchant) => (invoices ? [made[m].document] : []);
  return {
    targets: [
      merchantTarget(world, 'own', {
        ids: { merchantId: world.merchants.own, ...ids('own') },
        secrets: secrets('own'),
      }),
      merchantTarget(world, 'own', {
        label: "the merchant's path, the second merchant's document",
        mismatch: true,
        ids: { merchantId: world.merchants.own, ...ids('second') },
        secrets: secrets('second'),
      }),
      merchantTarget(world, 'second', {
        ids: { merchantId: world.merchants.second, ...ids('second') },
        secrets: secrets('second'),
      }),
      merchantTarget(world, 'other', {
        ids: { merchantId: world.merchants.other, ...ids('other') },
        secrets: secrets('other'),
      }),
    ],
  };
}
const registerInvoice: Exercise = {
  prepare: (world) => financingTargets(world, false),
  request: ({ target }) => ({
    params: { merchantId: target!.ids.merchantId! },
    json: { document_id: target!.ids.document },
  }),
  rows: (target) => [
    {
      table: 'financing_invoices',
      where: { document_id: target!.ids.document! },
      columns: ['id', 'status', 'extraction'],
    },
  ],
  async done({ target }) {
    const invoice = await row('financing_invoices', { document_id: target!.ids.document });
    return problem(invoice?.merchant_id === target!.ids.merchantId, 'no invoice for the document');
  },
};
const readInvoice: Exercise = {
  prepare: (world) => financingTargets(world, true),
  request: ({ target }) => ({ params: { merchantId: target!.ids.merchantId!, invoiceId: target!.ids.invoice! } }),
  shows: ({ target }, reply) => problem(reply.body.id === target!.ids.invoice, `id ${reply.body.id}`),
};

// ---------------------------------------------------------------------------------------------
// Agents

const AGENTS: AgentName[] = ['agent', 'peerAgent', 'manager', 'foreignAgent'];
const AGENT_LABEL: Record<AgentName, string> = {
  agent: 'the agent',
  peerAgent: "the agent's peer",
  manager: 'their manager',
  foreignAgent: "the other organization's agent",
};
const agentTarget = (world: World, agent: AgentName, customer?: Person): Instance => ({
  label: AGENT_LABEL[agent],
  organization: AGENT_ORGANIZATION[agent],
  agent,
  ids: { userId: world.agentPeople[agent].id, ...(customer && { customer: customer.id }) },
  secrets: customer ? personSecrets(customer) : [],
});

const listAgents: Exercise = {
  request: () => ({}),
  shows({ kind }, reply, { world }) {
    const visible = AGENTS.filter((a) => a !== kind && agentVisible(kind, a)).map((a) => world.agentPeople[a].id);
    const listed = (reply.body.data as { user_id: string }[]).map((a) => a.user_id);
    const invisible = listed.filter((id) => !visible.includes(id));
    if (invisible.length > 0) return `leak: lists ${invisible.length} agents it may not see`;
    return problem(
      visible.every((id) => listed.includes(id)),
      `lists ${listed.length} of ${visible.length} visible agents`,
    );
  },
};
const agentCustomers: Exercise = {
  async prepare(world) {
    const customers = await Promise.all(AGENTS.map((a) => world.assigned(a)));
    return { targets: AGENTS.map((a, i) => agentTarget(world, a, customers[i])) };
  },
  request: ({ target }) => ({ params: { userId: target!.ids.userId! } }),
  shows: ({ target }, reply) => {
    const listed = reply.body as { agent_user_id: string }[];
    return problem(
      listed.length > 0 && listed.every((a) => a.agent_user_id === target!.ids.userId),
      `${listed.length} assignments, not all the agent's`,
    );
  },
};
const assign: Exercise = {
  async prepare(world) {
    // A customer per target, so what a call changes is told apart by target.
    const customers = await Promise.all(AGENTS.map(() => world.newPerson('own', 'CUSTOMER')));
    return { targets: AGENTS.map((a, i) => agentTarget(world, a, customers[i])) };
  },
  request: ({ target }) => ({
    params: { userId: target!.ids.userId! },
    json: { customer_user_id: target!.ids.customer, reason: 'matrix' },
  }),
  rows: (target) => [
    {
      table: 'agent_assignments',
      where: { customer_user_id: target!.ids.customer! },
      columns: ['id', 'agent_user_id', 'is_active'],
    },
  ],
  async done({ target }) {
    const active = await row('agent_assignments', { customer_user_id: target!.ids.customer, is_active: true });
    return problem(active?.agent_user_id === target!.ids.userId, 'the customer is not assigned to the agent');
  },
};
const unassign: Exercise = {
  async prepare(world) {
    const customers = await Promise.all(AGENTS.map((a) => world.assigned(a)));
    return {
      targets: AGENTS.map((a, i) => agentTarget(world, a, customers[i])),
      // Each allowed call ends an assignment: another customer of the same agent.
      fresh: async (target) => agentTarget(world, target.agent!, await world.assigned(target.agent!)),
    };
  },
  request: ({ target }) => ({
    params: { userId: target!.ids.userId!, customerUserId: target!.ids.customer! },
    json: { reason: 'matrix' },
  }),
  rows: assign.rows,
  async done({ target }) {
    const ended = await row('agent_assignments', { customer_user_id: target!.ids.customer });
    return problem(ended?.is_active === false, 'the assignment is still active');
  },
};

export const FINANCING_AND_AGENT_EXERCISES: Record<string, Exercise> = {
  'POST /v1/financing/merchants/{merchantId}/uploads/presign': presign,
  'POST /v1/financing/merchants/{merchantId}/invoices': registerInvoice,
  'GET /v1/financing/merchants/{merchantId}/invoices/{invoiceId}': readInvoice,

  'GET /v1/agents': listAgents,
  'GET /v1/agents/{userId}/customers': agentCustomers,
  'POST /v1/agents/{userId}/customers': assign,
  'POST /v1/agents/{userId}/customers/{customerUserId}/unassign': unassign,
};

import type { Context } from 'koa';
import type { Knex } from 'knex';
import { z } from 'zod';
import { findAgent } from '../../db/agents/agents';
import {
  agentAssignments,
  assignCustomer,
  type AssignmentPosition,
  type AssignmentRow,
  isCustomer,
  supervises,
  unassignCustomer,
} from '../../db/agents/assignments';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { Permission } from '../../domain/rbac';
import type { UserCaller } from '../auth/caller';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { actingAs } from './acting';
import { AGENT_PAGE_SIZE } from './agents';

export const AgentAssignment = z
  .object({
    id: z.uuid(),
    agent_user_id: z.uuid(),
    agent_user_name: z.string(),
    agent_phone_number: z.string().nullable(),
    agent_email: z.string(),
    customer_user_id: z.uuid(),
    customer_name: z.string().nullable(),
    customer_email: z.string(),
    customer_phone_number: z.string().nullable(),
    assigned_at: z.iso.datetime(),
    unassigned_at: z.iso.datetime().nullable(),
    assigned_by: z.uuid(),
    unassigned_by: z.uuid().nullable(),
    assignment_reason: z.string().nullable(),
    unassignment_reason: z.string().nullable(),
    is_active: z.boolean(),
    resource_id: z.string().meta({ description: 'asg_<32 hex digits>' }),
  })
  .meta({ id: 'AgentAssignment' });

const view = (row: AssignmentRow): z.infer<typeof AgentAssignment> => ({
  id: row.id,
  agent_user_id: row.agent_user_id,
  agent_user_name: row.agent_user_name,
  agent_phone_number: row.agent_phone_number,
  agent_email: row.agent_email,
  customer_user_id: row.customer_user_id,
  customer_name: row.customer_name,
  customer_email: row.customer_email,
  customer_phone_number: row.customer_phone_number,
  assigned_at: row.assigned_at.toISOString(),
  unassigned_at: row.unassigned_at?.toISOString() ?? null,
  assigned_by: row.assigned_by,
  unassigned_by: row.unassigned_by,
  assignment_reason: row.assignment_reason,
  unassignment_reason: row.unassignment_reason,
  is_active: row.is_active,
  resource_id: `asg_${row.id.replace(/-/g, '')}`,
});

/** A cursor: base64url of the JSON `[is_active, assigned_at, id]` of a page's last row. */
const Position = z.tuple([z.boolean(), z.iso.datetime(), z.uuid()]);
const encodeCursor = (row: AssignmentRow) =>
  Buffer.from(JSON.stringify([row.is_active, row.assigned_at.toISOString(), row.id])).toString('base64url');
function decodeCursor(cursor: string): AssignmentPosition | undefined {
  try {
    const parsed = Position.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (!parsed.success) return undefined;
    return { isActive: parsed.data[0], assignedAt: new Date(parsed.data[1]), id: parsed.data[2] };
  } catch {
    return undefined;
  }
}

const AgentPath = z.object({ userId: z.uuid() });
const Cursor = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9_-]+$/);
const Reason = z
  .string()
  .min(1)
  .max(500)
  // Cc is C0, DEL and C1: spelled out, as the document's JSON Schema pattern carries no flags.
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f-\u009f]+$/, 'printable text, no control characters');
const READER: RouteAuth = { schemes: ['user'], permission: Permission.AGENTS_READ, refuseWaitingList: true };

/**
 * The agent, if the caller may see it (itself, an agent above it, or an admin); not found otherwise.
 * An agent's hierarchy rows name agents only (foreign keys) and include its own at depth 0, so for
 * an agent the one check is whether it is at or above the other: itself, which acting as an agent
 * just read ACTIVE, needs no more; an admin needs the agent to exist.
 */
async function visibleAgent(db: Knex, ctx: Context, userId: string) {
  const caller = ctx.state.caller as UserCaller;
  const admin = (await actingAs(db, caller)) === 'admin';
  const visible = admin
    ? (await findAgent(db, caller.organizationId, userId)) !== undefined
    : caller.userId === userId || (await supervises(db, caller.organizationId, caller.userId, userId, 0));
  if (!visible) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such agent');
  return { caller, admin };
}
/** The agent, if the caller may assign its customers: an agent above it or an admin (not the agent itself). */
async function managedAgent(db: Knex, ctx: Context, userId: string) {
  const acting = await visibleAgent(db, ctx, userId);
  if (acting.caller.userId === userId)
    throw new ServiceError(ErrorCode.FORBIDDEN, 'An agent’s customers are assigned by those above it');
  return acting;
}

/**
 * An agent's customers (spec 4.6) and the assignments that make them (extensions). Who may see an
 * agent's list: the agent itself, the agents above it, and the organization's admins
 * (`agents.admin`); who may assign or unassign: those above it and the admins. Anyone else is
 * told there is no such agent (404), so the hierarchy is not probed.
 */
export function assignmentRoutes(deps: Needs<'db' | 'clock', 'AGENT_CUSTOMERS_MAX'>): AnyRoute[] {
  return [listCustomersRoute(deps), assignRoute(deps), unassignRoute(deps)];
}

/**
 * GET customers (spec 4.6: "Response: array of Agent assignment"): the array holds every active
 * assignment of the agent, so a client that reads no Link header misses none; bounded by
 * AGENT_CUSTOMERS_MAX, far above any agent's book, with a 400 beyond it that says to page. Ended
 * assignments (the history) only when asked for (`history=true`). Paging is there for whoever
 * wants it: `size` (or a cursor) pages the same list through the Link header. Our choices where
 * the spec is silent.
 */
function listCustomersRoute({ db, config }: Needs<'db', 'AGENT_CUSTOMERS_MAX'>) {
  const most = config.AGENT_CUSTOMERS_MAX;
  return defineRoute({
    method: 'get',
    path: '/v1/agents/{userId}/customers',
    operationId: 'listAgentCustomers',
    summary: 'An agent’s customers: every active assignment (its history when asked for)',
    description:
      'Visible to the agent itself, the agents above it and the organization’s admins; to anyone else the agent is not ' +
      'found (404). The body is the spec’s array of Agent assignment: every active assignment of the agent, newest ' +
      `first (at most AGENT_CUSTOMERS_MAX, ${most}: an agent with more is 400, page with size). With history=true the ` +
      'ended assignments follow the active ones, newest first. Paging is optional: with size (1 to 100) or a cursor ' +
      'the same list comes a page at a time, paged by the `Link` header (RFC 8288): `<…?size=20&after=…>; rel="next"` ' +
      'while more follow, `<…?size=20&before=…>; rel="prev"` while some precede (relative to this path, keeping size ' +
      'and history; none at either end; a page without size is 20); after and before together are 400.',
    tags: ['agents'],
    auth: READER,
    request: {
      params: AgentPath,
      query: z.strictObject({
        size: z.coerce
          .number()
          .int()
          .min(1)
          .max(AGENT_PAGE_SIZE.max)
          .optional()
          .meta({ description: 'Pages the list (default: the whole list, unpaged)' }),
        after: Cursor.optional(),
        before: Cursor.optional(),
        history: z
          .enum(['true', 'false'])
          .default('false')
          .meta({ description: 'true: the ended assignments too, after the active ones' }),
      }),
    },
    responses: {
      200: {
        description: 'Every active assignment (and with history=true the ended ones), or one page of them',
        schema: z.array(AgentAssignment).meta({ id: 'AgentAssignmentList' }),
        headers: {
          Link: {
            description:
              'When paging (size or a cursor): RFC 8288 links to the neighbouring pages, relative to this path: ' +
              'rel="next" and rel="prev" when there are such pages; absent when there are none.',
          },
        },
      },
    },
    errors: {
      BAD_REQUEST: `size out of range, a cursor this service did not give out, after and before together, or more than ${most} assignments unpaged (page with size)`,
      NOT_FOUND: 'no such agent, or not one the caller may see',
      FORBIDDEN: 'an agent that is not ACTIVE (SUSPENDED or INACTIVE) acts as no agent',
    },
    async handler(ctx, { params, query }) {
      const { caller } = await visibleAgent(db, ctx, params.userId);
      if (query.after && query.before) throw new ServiceError(ErrorCode.BAD_REQUEST, 'Bad Request');
      const history = query.history === 'true';
      const key = query.after ? 'after' : 'before';
      const cursor = query[key];
      const position = cursor === undefined ? undefined : decodeCursor(cursor);
      if (cursor !== undefined && !position)
        throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
          { path: `query.${key}`, reason: 'not a cursor this list gave out', sub_code: SubCode.INVALID_VALUE },
        ]);
      if (query.size === undefined && cursor === undefined) {
        const all = await agentAssignments(db, caller.organizationId, params.userId, { size: most, history });
        if (all.more)
          throw new ServiceError(
            ErrorCode.BAD_REQUEST,
            `The agent has more than ${most} ${history ? '' : 'active '}assignments: page them with size (1 to ${AGENT_PAGE_SIZE.max}) and the Link header`,
          );
        ctx.body = all.rows.map(view);
        return;
      }
      const size = query.size ?? AGENT_PAGE_SIZE.default;
      const page = await agentAssignments(db, caller.organizationId, params.userId, {
        size,
        history,
        ...(position && { [key]: position }),
      });
      const link = (rel: 'next' | 'prev', row: AssignmentRow) =>
        `<${ctx.path}?size=${size}${history ? '&history=true' : ''}&${rel === 'next' ? 'after' : 'before'}=${encodeCursor(row)}>; rel="${rel}"`;
      const links = [
        ...(page.more ? [link('next', page.rows.at(-1)!)] : []),
        ...(page.less ? [link('prev', page.rows[0]!)] : []),
      ];
      if (links.length > 0) ctx.set('Link', links.join(', '));
      ctx.body = page.rows.map(view);
    },
  });
}

/** POST customers: assigning a customer to the agent. */
function assignRoute({ db, clock }: Needs<'db' | 'clock'>) {
  return defineRoute({
    method: 'post',
    path: '/v1/agents/{userId}/customers',
    operationId: 'assignAgentCustomer',
    summary: 'Assign a customer to the agent (extension)',
    description:
      'By the agents above it or an admin. The customer’s active assignment to another agent ends (unassigned_at, ' +
      'unassigned_by, the same reason) and a new one begins: 201. Already this agent’s customer: 200, nothing changes. ' +
      'An agent moves customers only within its own branch (unassigned ones, or those of agents under it); a customer ' +
      'assigned in another branch is 409, and only an admin moves them. The answer shows the customer’s name, e-mail ' +
      'and phone: whoever may assign a customer serves them.',
    extension: true,
    tags: ['agents'],
    auth: READER,
    request: {
      params: AgentPath,
      body: z.strictObject({ customer_user_id: z.uuid(), reason: Reason.optional() }),
    },
    responses: {
      201: { description: 'Assigned', schema: AgentAssignment },
      200: { description: 'Already assigned to this agent', schema: AgentAssignment },
    },
    errors: {
      NOT_FOUND: 'no such agent the caller may see, or no such customer in the organization',
      CONFLICT: 'the customer is assigned in another branch (only an admin moves them)',
      FORBIDDEN:
        'the agent itself (its customers are assigned by those above it); an agent that is not ACTIVE (SUSPENDED or INACTIVE) acts as no agent',
    },
    async handler(ctx, { params, body }) {
      const { caller, admin } = await managedAgent(db, ctx, params.userId);
      if (!(await isCustomer(db, caller.organizationId, body.customer_user_id)))
        throw new ServiceError(ErrorCode.NOT_FOUND, 'No such customer');
      const done = await assignCustomer(db, caller.organizationId, {
        agentUserId: params.userId,
        customerUserId: body.customer_user_id,
        by: caller.userId,
        reason: body.reason ?? null,
        now: clock.now(),
        ...(!admin && { within: caller.userId }),
      });
      if ('otherBranch' in done)
        throw new ServiceError(
          ErrorCode.CONFLICT,
          'The customer is assigned in another branch of the network: an admin can move them',
        );
      ctx.status = done.created ? 201 : 200;
      ctx.body = view(done.assignment);
    },
  });
}

/** POST unassign: ending a customer's assignment, kept as history. */
function unassignRoute({ db, clock }: Needs<'db' | 'clock'>) {
  return defineRoute({
    method: 'post',
    path: '/v1/agents/{userId}/customers/{customerUserId}/unassign',
    operationId: 'unassignAgentCustomer',
    summary: 'End a customer’s assignment to the agent (extension)',
    description: 'By the agents above it or an admin; the assignment is kept as history with who ended it and why.',
    extension: true,
    tags: ['agents'],
    auth: READER,
    request: {
      params: AgentPath.extend({ customerUserId: z.uuid() }),
      body: z.strictObject({ reason: Reason }),
    },
    responses: { 200: { description: 'Ended', schema: AgentAssignment } },
    errors: {
      NOT_FOUND: 'no such agent the caller may see, or the customer is not assigned to it',
      FORBIDDEN: 'the agent itself; an agent that is not ACTIVE (SUSPENDED or INACTIVE) acts as no agent',
    },
    async handler(ctx, { params, body }) {
      const { caller } = await managedAgent(db, ctx, params.userId);
      const ended = await unassignCustomer(db, caller.organizationId, {
        agentUserId: params.userId,
        customerUserId: params.customerUserId,
        by: caller.userId,
        reason: body.reason,
        now: clock.now(),
      });
      if (!ended) throw new ServiceError(ErrorCode.NOT_FOUND, 'The customer is not assigned to this agent');
      ctx.body = view(ended);
    },
  });
}

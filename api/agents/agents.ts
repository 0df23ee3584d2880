import { z } from 'zod';
import { AGENT_ROLES, AGENT_STATUSES, type AgentPosition, type AgentViewer, agentPage } from '../../db/agents/agents';
import { ErrorCode, ServiceError, SubCode } from '../../domain/errors';
import { Permission } from '../../domain/rbac';
import type { UserCaller } from '../auth/caller';
import type { Needs } from '../deps';
import { isAgentsAdmin, notActingAsAgent } from './acting';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';

/** Page sizes: greater than 0, 20 unless asked, at most 100 (as the installment lists). */
export const AGENT_PAGE_SIZE = { default: 20, max: 100 } as const;

export const Agent = z
  .object({
    user_id: z.uuid(),
    name: z.string(),
    email: z.string(),
    phone_number: z.string().nullable(),
    role: z.enum(AGENT_ROLES),
    status: z.enum(AGENT_STATUSES),
    territory: z.string().nullable(),
    supervisor_user_id: z.uuid().nullable().meta({ description: 'The agent one rank up; null for a leader' }),
    resource_id: z.string().meta({ description: 'agt_<32 hex digits>' }),
  })
  .meta({ id: 'Agent' });

/**
 * A cursor is opaque to clients: base64url of the JSON `[name, user_id]` of a page's end (the
 * list's order). Anything else is refused, never read as a position.
 */
const Position = z.tuple([z.string().min(1).max(500), z.uuid()]);
const encodeCursor = (end: AgentPosition) => Buffer.from(JSON.stringify([end.name, end.userId])).toString('base64url');
function decodeCursor(cursor: string): AgentPosition | undefined {
  try {
    const parsed = Position.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (!parsed.success || parsed.data[0].includes('\0')) return undefined;
    return { name: parsed.data[0], userId: parsed.data[1] };
  } catch {
    return undefined;
  }
}
const Cursor = z
  .string()
  .max(1_000)
  .regex(/^[A-Za-z0-9_-]+$/)
  .meta({ description: 'Opaque: the `after` or `before` of a previous page’s links' });

const Filter = z
  .string()
  .min(1)
  .max(100)
  // Cc is C0, DEL and C1: spelled out, as the document's JSON Schema pattern carries no flags.
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f-\u009f]+$/, 'printable text, no control characters');
const AgentsQuery = z.strictObject({
  size: z.coerce
    .number()
    .int()
    .min(1)
    .max(AGENT_PAGE_SIZE.max)
    .default(AGENT_PAGE_SIZE.default)
    .meta({ description: `Greater than 0, default ${AGENT_PAGE_SIZE.default}, at most ${AGENT_PAGE_SIZE.max}` }),
  after: Cursor.optional(),
  before: Cursor.optional(),
  role: z.enum(AGENT_ROLES).optional(),
  status: z.enum(AGENT_STATUSES).optional(),
  territory: Filter.optional().meta({ description: 'Exact territory' }),
  q: Filter.optional().meta({ description: 'Part of a name or an e-mail, any case' }),
  scope: z.enum(['OWN']).optional().meta({
    description:
      'OWN: only the caller and the agents it supervises (directly or not), for every caller, admins included',
  }),
});

const Links = z
  .strictObject({
    next: z.string().nullable().meta({ description: 'The next page (names further on); null on the last' }),
    prev: z.string().nullable().meta({ description: 'The previous page; null on the first' }),
  })
  .meta({ id: 'AgentPageLinks' });

const READER: RouteAuth = { schemes: ['user'], permission: Permission.AGENTS_READ, refuseWaitingList: true };

/**
 * The agent network (spec 4.6). Who sees whom is the query itself: an admin (`agents.admin`)
 * every agent of the organization; anyone else the agents under it in the hierarchy (managers
 * their agents, leaders their managers and those managers' agents; an agent nobody); scope=OWN
 * the caller and those under it, for everyone.
 */
export function agentRoutes(deps: Needs<'db'>): AnyRoute[] {
  const { db } = deps;
  return [
    defineRoute({
      method: 'get',
      path: '/v1/agents',
      operationId: 'listAgents',
      summary: 'The agents the caller manages',
      description:
        'Managers see their agents, leaders their managers and those managers’ agents, admins every agent of the ' +
        'organization; scope=OWN restricts anyone (admins too) to itself and the agents it supervises. In name order ' +
        '(then user id), keyset-paged both ways: follow links.next and links.prev, which keep the filters.',
      tags: ['agents'],
      auth: READER,
      request: { query: AgentsQuery },
      responses: {
        200: {
          description: 'A page of agents',
          schema: z.strictObject({ data: z.array(Agent), links: Links }).meta({ id: 'AgentPage' }),
        },
      },
      errors: {
        BAD_REQUEST:
          'a filter or size out of range, a cursor this service did not give out, or after and before together',
        FORBIDDEN: 'an agent that is not ACTIVE (SUSPENDED or INACTIVE) acts as no agent',
      },
      async handler(ctx, { query }) {
        const caller = ctx.state.caller as UserCaller;
        if (query.after && query.before) throw new ServiceError(ErrorCode.BAD_REQUEST, 'Bad Request');
        const cursor = query.after ?? query.before;
        const position = cursor === undefined ? undefined : decodeCursor(cursor);
        if (cursor !== undefined && !position)
          throw new ServiceError(ErrorCode.INVALID_PARAMS, 'Invalid parameters', [
            {
              path: query.after ? 'query.after' : 'query.before',
              reason: 'not a cursor this list gave out',
              sub_code: SubCode.INVALID_VALUE,
            },
          ]);
        // A caller who is no admin acts as an agent: the page's statement checks it is ACTIVE.
        const asAdmin = isAgentsAdmin(caller);
        const viewer: AgentViewer =
          asAdmin && query.scope !== 'OWN'
            ? { kind: 'ORGANIZATION' }
            : { kind: 'SUBTREE', userId: caller.userId, includeSelf: query.scope === 'OWN' };
        const page = await agentPage(
          db,
          caller.organizationId,
          viewer,
          { role: query.role, status: query.status, territory: query.territory, q: query.q },
          {
            size: query.size,
            ...(query.after ? { after: position } : {}),
            ...(query.before ? { before: position } : {}),
          },
          asAdmin ? undefined : caller.userId,
        );
        if (!page.allowed) throw notActingAsAgent();
        const link = (key: 'after' | 'before', end: AgentPosition) => {
          const params = new URLSearchParams({ size: String(query.size) });
          for (const name of ['role', 'status', 'territory', 'q', 'scope'] as const)
            if (query[name]) params.set(name, query[name]);
          params.set(key, encodeCursor(end));
          return `${ctx.path}?${params}`;
        };
        const links = {
          next: page.more && page.last ? link('after', page.last) : null,
          prev: page.less && page.first ? link('before', page.first) : null,
        };
        // The rows as Postgres wrote them (the Agent schema's fields): not parsed and written again.
        ctx.type = 'application/json';
        ctx.body = `{"data":${page.data},"links":${JSON.stringify(links)}}`;
      },
    }),
  ];
}

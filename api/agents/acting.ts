import type { Knex } from 'knex';
import { findAgent } from '../../db/agents/agents';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { allows, Permission } from '../../domain/rbac';
import type { UserCaller } from '../auth/caller';

/**
 * How the caller acts on the agent routes: as the organization's admin (`agents.admin`), or as an
 * agent, which only an ACTIVE one does. A SUSPENDED or INACTIVE agent, or a user with an agent
 * role and no agent record, is refused (403) before anything is read; its own subtree stays
 * visible to the agents above it and to the admins.
 */
export async function actingAs(db: Knex, caller: UserCaller): Promise<'admin' | 'agent'> {
  if (isAgentsAdmin(caller)) return 'admin';
  const self = await findAgent(db, caller.organizationId, caller.userId);
  if (self?.status !== 'ACTIVE') throw notActingAsAgent();
  return 'agent';
}

/** Whether the caller administers its organization's agents (`agents.admin`). */
export const isAgentsAdmin = (caller: UserCaller) =>
  allows(caller.grants, Permission.AGENTS_ADMIN, caller.organizationId, caller.organizationId);

/** The refusal of a caller that is neither an admin nor an ACTIVE agent. */
export const notActingAsAgent = () => new ServiceError(ErrorCode.FORBIDDEN, 'Only an ACTIVE agent acts as an agent');

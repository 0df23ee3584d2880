import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** An assignment with the names and contacts of its agent and customer. */
export interface AssignmentRow {
  id: string;
  organization_id: string;
  agent_user_id: string;
  agent_user_name: string;
  agent_phone_number: string | null;
  agent_email: string;
  customer_user_id: string;
  customer_name: string | null;
  customer_email: string;
  customer_phone_number: string | null;
  assigned_at: Date;
  assigned_by: string;
  assignment_reason: string | null;
  unassigned_at: Date | null;
  unassigned_by: string | null;
  unassignment_reason: string | null;
  is_active: boolean;
}

/** A keyset position in an agent's list (active first, newest first). */
export interface AssignmentPosition {
  isActive: boolean;
  assignedAt: Date;
  id: string;
}

function selectAssignments(db: Knex, organizationId: string) {
  return db('agent_assignments as s')
    .join('agents as a', function () {
      this.on('a.user_id', 's.agent_user_id').andOn('a.organization_id', 's.organization_id');
    })
    .join('users as c', function () {
      this.on('c.id', 's.customer_user_id').andOn('c.organization_id', 's.organization_id');
    })
    .where('s.organization_id', organizationId)
    .select(
      's.id',
      's.organization_id',
      's.agent_user_id',
      'a.name as agent_user_name',
      'a.phone_number as agent_phone_number',
      'a.email as agent_email',
      's.customer_user_id',
      'c.name as customer_name',
      'c.email as customer_email',
      'c.phone_number as customer_phone_number',
      's.assigned_at',
      's.assigned_by',
      's.assignment_reason',
      's.unassigned_at',
      's.unassigned_by',
      's.unassignment_reason',
      's.is_active',
    );
}

/**
 * One page of an agent's assignments: its active ones, newest first, then (with `history`) its
 * ended ones, newest first; after a position (forward) or before one (backward, read in reverse
 * then put back in order). `more`: rows follow the page; `less`: rows precede it.
 */
export async function agentAssignments(
  db: Knex,
  organizationId: string,
  agentUserId: string,
  page: { size: number; history: boolean; after?: AssignmentPosition; before?: AssignmentPosition },
): Promise<{ rows: AssignmentRow[]; more: boolean; less: boolean }> {
  const q = selectAssignments(db, organizationId).where('s.agent_user_id', agentUserId);
  if (!page.history) q.where('s.is_active', true);
  const at = page.after ?? page.before;
  const towardsStart = page.before !== undefined;
  if (at)
    q.whereRaw(`(s.is_active, s.assigned_at, s.id) ${towardsStart ? '>' : '<'} (?, ?, ?)`, [
      at.isActive,
      at.assignedAt,
      at.id,
    ]);
  const order = towardsStart ? 'asc' : 'desc';
  const read: AssignmentRow[] = await q
    .orderBy([
      { column: 's.is_active', order },
      { column: 's.assigned_at', order },
      { column: 's.id', order },
    ])
    .limit(page.size + 1);
  const beyond = read.length > page.size;
  const rows = read.slice(0, page.size);
  if (towardsStart) rows.reverse();
  // A cursor is only ever given out for a row that was there: a page after one has rows before it.
  return towardsStart
    ? { rows, more: rows.length > 0, less: beyond }
    : { rows, more: beyond, less: page.after !== undefined && rows.length > 0 };
}

/** Whether `viewerUserId` is the agent or above it in the hierarchy (depth ≥ `minDepth`). */
export async function supervises(
  db: Knex,
  organizationId: string,
  viewerUserId: string,
  agentUserId: string,
  minDepth: number,
): Promise<boolean> {
  const row = await db('agent_hierarchy')
    .where({ organization_id: organizationId, ancestor_user_id: viewerUserId, descendant_user_id: agentUserId })
    .where('depth', '>=', minDepth)
    .first('depth');
  return row !== undefined;
}

/** Whether the user is one of the organization's customers. */
export async function isCustomer(db: Knex, organizationId: string, userId: string): Promise<boolean> {
  const row = await db('user_access')
    .where({ organization_id: organizationId, user_id: userId, role: 'CUSTOMER' })
    .first('user_id');
  return row !== undefined;
}

/** Changes to one customer's assignments, one at a time: the second sees the first's rows, never a gap. */
async function lockCustomer(trx: Knex.Transaction, organizationId: string, customerUserId: string) {
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [
    `agent-assignment:${organizationId}:${customerUserId}`,
  ]);
}

/**
 * Assigns the customer to the agent, ending its active assignment to another agent (with the
 * same reason, and who did it). Already assigned to this agent: nothing changes. One
 * transaction under a lock on the customer; the partial unique index stands behind it.
 */
export async function assignCustomer(
  db: Knex,
  organizationId: string,
  input: {
    agentUserId: string;
    customerUserId: string;
    by: string;
    reason: string | null;
    now: Date;
    /** Only an active assignment to this user or an agent under it may be ended (unset: any, for admins). */
    within?: string;
  },
): Promise<{ assignment: AssignmentRow; created: boolean } | { otherBranch: true }> {
  const id = await db.transaction(async (trx) => {
    // Assignments of one customer, one at a time: the second sees the first's row, never a gap.
    await lockCustomer(trx, organizationId, input.customerUserId);
    const active = await trx('agent_assignments')
      .where({ organization_id: organizationId, customer_user_id: input.customerUserId, is_active: true })
      .first('id', 'agent_user_id');
    if (active?.agent_user_id === input.agentUserId) return { id: active.id as string, created: false };
    if (active && input.within && !(await supervises(trx, organizationId, input.within, active.agent_user_id, 0)))
      return undefined;
    if (active)
      await trx('agent_assignments').where({ organization_id: organizationId, id: active.id }).update({
        is_active: false,
        unassigned_at: input.now,
        unassigned_by: input.by,
        unassignment_reason: input.reason,
      });
    const newId = randomUUID();
    await trx('agent_assignments').insert({
      id: newId,
      organization_id: organizationId,
      agent_user_id: input.agentUserId,
      customer_user_id: input.customerUserId,
      assigned_at: input.now,
      assigned_by: input.by,
      assignment_reason: input.reason,
      is_active: true,
    });
    return { id: newId, created: true };
  });
  if (!id) return { otherBranch: true };
  const assignment = await selectAssignments(db, organizationId).where('s.id', id.id).first();
  return { assignment, created: id.created };
}

/** Ends the customer's active assignment to the agent; undefined when there is none. */
export async function unassignCustomer(
  db: Knex,
  organizationId: string,
  input: { agentUserId: string; customerUserId: string; by: string; reason: string | null; now: Date },
): Promise<AssignmentRow | undefined> {
  const [ended] = await db.transaction(async (trx): Promise<{ id: string }[]> => {
    await lockCustomer(trx, organizationId, input.customerUserId);
    return trx('agent_assignments')
      .where({
        organization_id: organizationId,
        agent_user_id: input.agentUserId,
        customer_user_id: input.customerUserId,
        is_active: true,
      })
      .update({
        is_active: false,
        unassigned_at: input.now,
        unassigned_by: input.by,
        unassignment_reason: input.reason,
      })
      .returning('id');
  });
  if (!ended) return undefined;
  return selectAssignments(db, organizationId).where('s.id', ended.id).first();
}

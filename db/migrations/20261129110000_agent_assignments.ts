import type { Knex } from 'knex';

/**
 * Agent-to-customer assignments with their full history: a row per assignment, ended (never
 * deleted) when the customer is unassigned or reassigned, with who did each and why. At most one
 * active assignment per customer, by a partial unique index, so two reassignments at once cannot
 * both leave one active.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_assignments', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable();
    t.uuid('agent_user_id').notNullable();
    t.uuid('customer_user_id').notNullable();
    t.foreign(['agent_user_id', 'organization_id']).references(['user_id', 'organization_id']).inTable('agents');
    t.foreign(['customer_user_id', 'organization_id']).references(['id', 'organization_id']).inTable('users');
    t.timestamp('assigned_at', { useTz: true }).notNullable();
    t.uuid('assigned_by').notNullable();
    t.text('assignment_reason');
    t.timestamp('unassigned_at', { useTz: true });
    t.uuid('unassigned_by');
    t.text('unassignment_reason');
    t.boolean('is_active').notNullable().defaultTo(true);
    // An agent's list: active first, newest first.
    t.index(['organization_id', 'agent_user_id', 'is_active', 'assigned_at']);
  });
  await knex.raw(
    'create unique index agent_assignments_one_active on agent_assignments (organization_id, customer_user_id) where is_active',
  );
  await knex.raw(`alter table agent_assignments add constraint agent_assignments_ended check (
    is_active = (unassigned_at is null) and (unassigned_at is null) = (unassigned_by is null))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_assignments');
}

import type { Knex } from 'knex';

/**
 * The agent network: agents (users who sell and collect), each with a supervisor of the next rank
 * up (agent → manager → leader), and the hierarchy as a closure table: one row per (ancestor,
 * descendant) pair with its depth, the agent itself at depth 0. "Everyone under X" is one indexed
 * range on (ancestor_user_id); a move rewrites only the moved subtree's rows. A closure table
 * rather than a materialized path: visibility is a join on an equality, never a prefix match, and
 * the rows carry the organization, so the join filters by it too.
 *
 * Search by name or e-mail is a trigram index (pg_trgm) over `name || ' ' || email`, so
 * `ILIKE '%q%'` is an index scan, not a sequential one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists pg_trgm');
  await knex.raw('alter table users add constraint users_id_organization unique (id, organization_id)');
  await knex.schema.createTable('agents', (t) => {
    t.uuid('user_id').primary();
    t.text('organization_id').notNullable();
    t.foreign(['user_id', 'organization_id']).references(['id', 'organization_id']).inTable('users');
    t.text('role').notNullable().checkIn(['AGENT', 'MANAGER', 'LEADER']);
    t.text('status').notNullable().defaultTo('ACTIVE').checkIn(['ACTIVE', 'INACTIVE', 'SUSPENDED']);
    t.text('territory');
    t.text('name').notNullable();
    t.text('email').notNullable();
    t.text('phone_number');
    t.uuid('supervisor_user_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['user_id', 'organization_id']);
    t.foreign(['supervisor_user_id', 'organization_id']).references(['user_id', 'organization_id']).inTable('agents');
    // Keyset paging in name order within an organization (admins' view).
    t.index(['organization_id', 'name', 'user_id']);
  });
  await knex.raw(`create index agents_search on agents using gin ((name || ' ' || email) gin_trgm_ops)`);
  await knex.schema.createTable('agent_hierarchy', (t) => {
    t.text('organization_id').notNullable();
    t.uuid('ancestor_user_id').notNullable();
    t.uuid('descendant_user_id').notNullable();
    t.integer('depth').notNullable();
    t.primary(['ancestor_user_id', 'descendant_user_id']);
    t.foreign(['ancestor_user_id', 'organization_id']).references(['user_id', 'organization_id']).inTable('agents');
    t.foreign(['descendant_user_id', 'organization_id']).references(['user_id', 'organization_id']).inTable('agents');
    t.index(['descendant_user_id']);
  });
  await knex.raw('alter table agent_hierarchy add constraint agent_hierarchy_depth check (depth >= 0)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_hierarchy');
  await knex.schema.dropTable('agents');
  await knex.raw('alter table users drop constraint users_id_organization');
}

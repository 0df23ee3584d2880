import type { Knex } from 'knex';

/**
 * The list's order and search carried by the closure table, so that "a page of the agents under
 * X" is one range of one index, whatever X's rank and however far the page lies.
 *
 * An agent's search text is `lower(name || ' ' || email)`, stored (generated) in the C collation:
 * a search is `search LIKE lower(q)`, byte comparisons on text folded once when it is written,
 * about five times cheaper per row than ILIKE under a linguistic collation. Its trigram index
 * replaces the one over the ILIKE expression.
 *
 * Each closure row keeps a copy of its descendant's name and search text, held equal to the
 * agent's by a foreign key over both with ON UPDATE CASCADE (the database keeps the copy; no
 * trigger and no code path can forget it). Then:
 *   - (ancestor, name, descendant), with the search text included, is the list in name order for
 *     any viewer: a keyset page reads its own rows and no others, so the last page costs what the
 *     first does, and a common search is filtered within that range without leaving the index;
 *   - a GIN index over (ancestor, search trigrams), with btree_gin, finds a rare search's matches
 *     among those under the viewer only, not among the whole organization.
 * The planner picks between the two by the pattern's estimated selectivity. The trigram indexes
 * are written through (fastupdate off): agents change rarely, and a search then never reads a
 * pending list of unsorted entries first.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists btree_gin');
  await knex.raw(`alter table agents add column search text collate "C"
                    generated always as (lower(name || ' ' || email)) stored`);
  await knex.raw('drop index agents_search');
  await knex.raw(`create index agents_search on agents using gin (search gin_trgm_ops) with (fastupdate = off)`);
  await knex.raw('alter table agents add constraint agents_listed unique (user_id, organization_id, name, search)');
  await knex.raw(
    'alter table agent_hierarchy add column descendant_name text, add column descendant_search text collate "C"',
  );
  await knex.raw(`update agent_hierarchy h set descendant_name = a.name, descendant_search = a.search
                    from agents a where a.user_id = h.descendant_user_id and a.organization_id = h.organization_id`);
  await knex.raw(`alter table agent_hierarchy
                    alter column descendant_name set not null,
                    alter column descendant_search set not null,
                    drop constraint agent_hierarchy_descendant_user_id_organization_id_foreign,
                    add constraint agent_hierarchy_descendant foreign key
                      (descendant_user_id, organization_id, descendant_name, descendant_search)
                      references agents (user_id, organization_id, name, search) on update cascade`);
  await knex.raw(`create index agent_hierarchy_list on agent_hierarchy
                    (ancestor_user_id, descendant_name, descendant_user_id)
                    include (depth, organization_id, descendant_search)`);
  await knex.raw(`create index agent_hierarchy_search on agent_hierarchy
                    using gin (ancestor_user_id, descendant_search gin_trgm_ops) with (fastupdate = off)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index agent_hierarchy_search');
  await knex.raw('drop index agent_hierarchy_list');
  await knex.raw(`alter table agent_hierarchy
                    drop constraint agent_hierarchy_descendant,
                    add constraint agent_hierarchy_descendant_user_id_organization_id_foreign foreign key
                      (descendant_user_id, organization_id) references agents (user_id, organization_id),
                    drop column descendant_name,
                    drop column descendant_search`);
  await knex.raw('alter table agents drop constraint agents_listed');
  await knex.raw('drop index agents_search');
  await knex.raw('alter table agents drop column search');
  await knex.raw(`create index agents_search on agents using gin ((name || ' ' || email) gin_trgm_ops)`);
}

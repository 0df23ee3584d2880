import type { Knex } from 'knex';

/**
 * Tenants and their users. Organization ids are strings (the spec types organization_id as a
 * string); every table holding tenant data carries organization_id and is queried by it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organizations', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    /** The identity provider's subject for this user, when it is not our uuid. */
    t.text('auth_id').unique();
    t.text('email').notNullable();
    t.text('phone_number');
    t.text('name');
    t.text('status').notNullable().defaultTo('ACTIVE').checkIn(['ACTIVE', 'WAITING_LIST', 'DISABLED']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['organization_id', 'email']);
    t.index(['organization_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('users');
  await knex.schema.dropTable('organizations');
}

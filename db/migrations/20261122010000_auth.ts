import type { Knex } from 'knex';

/**
 * Authentication and authorization: who may act in which organization (access), trusted
 * partners, API keys, refresh-token families, merchants and their users for financing, and the
 * shared rate-limit counters. Secrets are stored only as SHA-256 hashes: API keys and refresh
 * tokens are 256-bit random values, so a fast hash is enough to make a stolen table useless.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_access', (t) => {
    t.uuid('user_id').notNullable().references('users.id');
    t.text('organization_id').notNullable().references('organizations.id');
    /** Role names are defined in domain/rbac.ts with their permissions. */
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['user_id', 'organization_id', 'role']);
    t.index(['organization_id']);
  });

  await knex.schema.createTable('partners', (t) => {
    t.uuid('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('name').notNullable();
    /** The `iss` of the partner's JWTs; identifies the partner on exchange. */
    t.text('issuer').notNullable().unique();
    t.text('jwks_url');
    t.jsonb('public_jwk');
    t.specificType('permissions', 'text[]').notNullable().defaultTo('{}');
    t.text('status').notNullable().defaultTo('ACTIVE').checkIn(['ACTIVE', 'DISABLED']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    'alter table partners add constraint partners_key_given check (jwks_url is not null or public_jwk is not null)',
  );

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary();
    /** Null for platform keys. */
    t.text('organization_id').references('organizations.id');
    t.text('scope').notNullable().checkIn(['ORG', 'PLATFORM']);
    t.text('label');
    t.text('key_hash').notNullable().unique();
    /** The first characters of the key, so an operator can tell keys apart without the secret. */
    t.text('key_hint').notNullable();
    t.specificType('permissions', 'text[]').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
  });
  await knex.raw(
    "alter table api_keys add constraint api_keys_scope_org check ((scope = 'PLATFORM') = (organization_id is null))",
  );

  await knex.schema.createTable('refresh_tokens', (t) => {
    t.uuid('id').primary();
    /** Every token rotated from one sign-in shares a family; reuse of a spent one revokes it. */
    t.uuid('family_id').notNullable();
    t.uuid('user_id').notNullable().references('users.id');
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('token_hash').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.index(['family_id']);
  });

  await knex.schema.createTable('merchants', (t) => {
    t.text('id').primary();
    t.text('organization_id').notNullable().references('organizations.id');
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('merchant_access', (t) => {
    /** The financing identity provider's subject (not necessarily one of our users). */
    t.text('subject').notNullable();
    t.text('issuer').notNullable();
    t.text('merchant_id').notNullable().references('merchants.id');
    t.specificType('permissions', 'text[]').notNullable().defaultTo('{}');
    t.primary(['issuer', 'subject', 'merchant_id']);
  });

  // rate-limiter-flexible's table layout, created here so no request path runs DDL. Unlogged:
  // counters are worth nothing after a crash, and skipping the WAL spares every request a flush.
  await knex.raw(`create unlogged table rate_limits (
    key varchar(255) primary key,
    points integer not null default 0,
    expire bigint
  )`);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'rate_limits',
    'merchant_access',
    'merchants',
    'refresh_tokens',
    'api_keys',
    'partners',
    'user_access',
  ]) {
    await knex.schema.dropTable(table);
  }
}

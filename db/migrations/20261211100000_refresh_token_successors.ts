import type { Knex } from 'knex';

/**
 * A refresh token's answer, kept so that the same token sent again within
 * REFRESH_TOKEN_REUSE_LEEWAY (its first answer lost on the way back) gets that same answer
 * instead of revoking the session: the successor it was rotated to, and the answer itself
 * (ID token and successor) sealed with a key only the presented token derives (AES-256-GCM), so
 * the table alone gives nothing away. Both stay null for tokens rotated before this.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.uuid('successor_id');
    t.binary('successor_answer');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.dropColumn('successor_answer');
    t.dropColumn('successor_id');
  });
}

import type { Knex } from 'knex';

/** Whether the organization exists (the apikey CLI checks before creating a key for it). */
export async function organizationExists(db: Knex, organizationId: string): Promise<boolean> {
  return (await db('organizations').where({ id: organizationId }).first()) !== undefined;
}

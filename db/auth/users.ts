import type { Knex } from 'knex';

/** Users and their access (user_access): who a caller is, and what roles she holds where. */
export interface UserRow {
  id: string;
  organization_id: string;
  status: 'ACTIVE' | 'WAITING_LIST' | 'DISABLED';
}

/** The user with our id. No organization first: resolving a caller is how it is learnt. */
export function findUserById(db: Knex, id: string): Promise<UserRow | undefined> {
  return db('users').where({ id }).first<UserRow | undefined>();
}

/** The user the identity provider knows by `authId`. No organization first: resolving a caller is how it is learnt. */
export function findUserByAuthId(db: Knex, authId: string): Promise<UserRow | undefined> {
  return db('users').where({ auth_id: authId }).first<UserRow | undefined>();
}

/** The roles the user holds in the organization; none means no access to it. */
export function userRoles(db: Knex, organizationId: string, userId: string): Promise<string[]> {
  return db('user_access').where({ user_id: userId, organization_id: organizationId }).pluck('role');
}

/** Whether the user holds any role in the organization. */
export async function hasAccess(db: Knex, organizationId: string, userId: string): Promise<boolean> {
  return (await db('user_access').where({ user_id: userId, organization_id: organizationId }).first()) !== undefined;
}

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

/** A new user of the organization with her roles (in one database transaction with what the caller adds). */
export async function createUser(
  trx: Knex.Transaction,
  organizationId: string,
  user: { id: string; email: string; name: string; phone: string; status: UserRow['status']; roles: string[] },
): Promise<void> {
  await trx('users').insert({
    id: user.id,
    organization_id: organizationId,
    email: user.email,
    name: user.name,
    phone_number: user.phone,
    status: user.status,
  });
  await trx('user_access').insert(
    user.roles.map((role) => ({ user_id: user.id, organization_id: organizationId, role })),
  );
}

/** The user with this e-mail, for the development CLIs (they run for an operator, across organizations). */
export function findUserByEmail(db: Knex, email: string): Promise<(UserRow & { auth_id: string | null }) | undefined> {
  return db('users').whereRaw('lower(email) = lower(?)', [email]).first();
}

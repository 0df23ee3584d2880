import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** A KYC subject: the identity fields of a user, one subject per user. */
export interface KycSubjectRow {
  id: string;
  organization_id: string;
  user_id: string;
  type: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  id_number: string | null;
  date_of_birth: string | null;
  gender: string | null;
  identity_type: string | null;
  country: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The fields a submission states about its subject. */
export type KycSubjectFields = Partial<
  Pick<
    KycSubjectRow,
    'type' | 'name' | 'email' | 'phone' | 'id_number' | 'date_of_birth' | 'gender' | 'identity_type' | 'country'
  >
>;

/** The users columns KYC reads (a subject falls back to them). */
export interface KycUserRow {
  id: string;
  organization_id: string;
  email: string;
  phone_number: string | null;
  name: string | null;
}

/** The user's subject in the organization. */
export function findSubject(db: Knex, organizationId: string, userId: string): Promise<KycSubjectRow | undefined> {
  return db('kyc_subjects').where({ organization_id: organizationId, user_id: userId }).first();
}

/** Creates the user's subject with `fields`, or updates them on the one the user has. */
export async function upsertSubject(
  trx: Knex | Knex.Transaction,
  organizationId: string,
  userId: string,
  fields: KycSubjectFields,
  now: Date,
): Promise<void> {
  await trx('kyc_subjects')
    .insert({ id: randomUUID(), organization_id: organizationId, user_id: userId, ...fields })
    .onConflict('user_id')
    .merge({ ...fields, updated_at: now });
}

/** A user of the organization. */
export function findUser(db: Knex, organizationId: string, userId: string): Promise<KycUserRow | undefined> {
  return db('users').where({ organization_id: organizationId, id: userId }).first();
}

/**
 * The caller's own user row, by the user id of their verified token. Not by organization: a
 * user may act for an organization other than their own (user_access), and their profile is
 * the same in each.
 */
export function findCallerUser(db: Knex, userId: string): Promise<KycUserRow | undefined> {
  return db('users').where({ id: userId }).first();
}

/**
 * The organization a user belongs to, by the user id alone: for a platform API key's internal
 * lookup without organization_id (spec 5.6), a caller that may read every organization, so the
 * user id is what determines the one read. Not for any other caller.
 */
export async function findUserOrganization(db: Knex, userId: string): Promise<string | undefined> {
  const row: { organization_id: string } | undefined = await db('users').where({ id: userId }).first('organization_id');
  return row?.organization_id;
}

import type { Knex } from 'knex';

/** What self-service reads of a user: where codes can go, and whether the e-mail is verified. */
export function findUserContact(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<{ email: string; email_verified_at: Date | null; phone_number: string | null } | undefined> {
  return db('users')
    .where({ organization_id: organizationId, id: userId })
    .first('email', 'email_verified_at', 'phone_number');
}

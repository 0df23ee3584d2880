import type { Knex } from 'knex';
import { findAccountOwner } from '../../db/accounts/accounts';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { Caller } from '../auth/caller';

/**
 * The account a caller may read the installments of: a customer's own, or any of the
 * organization a key or partner acts for. Anything else (another customer's, another
 * organization's, none at all) is 404. Answers the account's organization.
 */
export async function readableAccount(db: Knex, caller: Caller, accountId: string): Promise<string> {
  const account = caller.organizationId ? await findAccountOwner(db, caller.organizationId, accountId) : undefined;
  if (!account || (caller.scheme === 'user' && account.user_id !== caller.userId))
    throw new ServiceError(ErrorCode.NOT_FOUND, 'No such account');
  return caller.organizationId!;
}

import type { Knex } from 'knex';
import { findAccountOwner } from '../../db/accounts/accounts';
import { accountGate, type Gate } from '../../db/loans/transactions';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { allows, Permission } from '../../domain/rbac';
import type { Caller } from '../auth/caller';

/**
 * The account a caller may read the installments of: a customer's own; any of its organization
 * for a key, a partner or a staff user (one holding loans.read: customers hold accounts.read too,
 * so that alone cannot tell staff apart). Anything else (another customer's, another
 * organization's, none at all) is 404. Answers the account's organization.
 */
export async function readableAccount(db: Knex, caller: Caller, accountId: string): Promise<string> {
  const account = caller.organizationId ? await findAccountOwner(db, caller.organizationId, accountId) : undefined;
  const owner = onlyOwnOf(caller);
  if (!account || (owner !== undefined && account.user_id !== owner))
    throw new ServiceError(ErrorCode.NOT_FOUND, 'No such account');
  return caller.organizationId!;
}

/**
 * The user whose accounts alone the caller reads: a customer (a user without loans.read) only its
 * own; undefined for keys, partners and staff, who read any of the organization's.
 */
const onlyOwnOf = (caller: Caller): string | undefined =>
  caller.scheme === 'user' &&
  !allows(caller.grants, Permission.LOANS_READ, caller.organizationId, caller.organizationId ?? '')
    ? caller.userId
    : undefined;

/**
 * readableAccount's rule as a gate the page's own statement checks (one round trip, not two):
 * the organization's account, and only the caller's own for a customer; then, when given, an
 * installment of that account.
 */
export function readableAccountGate(caller: Caller, accountId: string, installmentId?: string): Gate {
  if (!caller.organizationId) throw new ServiceError(ErrorCode.NOT_FOUND, 'No such account');
  return accountGate(caller.organizationId, accountId, onlyOwnOf(caller), installmentId);
}

/** What a page's gate found missing, as the 404 readableAccount (or the installment's check) answers. */
export function notReadable(refused: string): ServiceError {
  return new ServiceError(ErrorCode.NOT_FOUND, refused === 'installment' ? 'No such installment' : 'No such account');
}

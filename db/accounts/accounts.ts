import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { createUser, type UserRow } from '../auth/users';

/** A customer's accounts: a current account (deposits and payouts) and a credit account (loans). */
export interface CustomerAccounts {
  current: string;
  credit: string;
}

/**
 * Opens a customer's accounts in `currency`: the credit account ACTIVE (loans are booked on it),
 * the current account PENDING_ACTIVATION until its activation onboards the customer at the bank.
 */
export async function openCustomerAccounts(
  db: Knex | Knex.Transaction,
  organizationId: string,
  userId: string,
  currency = 'KES',
): Promise<CustomerAccounts> {
  const accounts = { current: randomUUID(), credit: randomUUID() };
  await db('accounts').insert([
    {
      id: accounts.current,
      organization_id: organizationId,
      user_id: userId,
      type: 'CURRENT',
      currency,
      status: 'PENDING_ACTIVATION',
    },
    { id: accounts.credit, organization_id: organizationId, user_id: userId, type: 'CREDIT', currency },
  ]);
  return accounts;
}

/**
 * A customer's sign-up: the user (as the identity provider knows them) and the accounts a
 * customer opens with, in one transaction. What comes after (KYC, activation) goes through the API.
 */
export function signUpCustomer(
  db: Knex,
  organizationId: string,
  user: { id: string; email: string; name: string; phone: string; status: UserRow['status'] },
): Promise<CustomerAccounts> {
  return db.transaction(async (trx) => {
    await createUser(trx, organizationId, { ...user, roles: ['CUSTOMER'] });
    return openCustomerAccounts(trx, organizationId, user.id);
  });
}

/**
 * Locks an account for the rest of the database transaction, so two movements (payouts,
 * collateral holds) cannot both spend the same available money; answers its status then.
 */
export async function lockAccount(trx: Knex.Transaction, accountId: string): Promise<{ status: string } | undefined> {
  return trx('accounts').where({ id: accountId }).forUpdate().first('status');
}

/** The user's account of `type` in the organization, when it is active. */
export function findActiveAccount(
  db: Knex | Knex.Transaction,
  organizationId: string,
  userId: string,
  type: 'CURRENT' | 'CREDIT',
): Promise<{ id: string; currency: string } | undefined> {
  return db('accounts')
    .where({ organization_id: organizationId, user_id: userId, type, status: 'ACTIVE' })
    .first('id', 'currency');
}

/** Who owns an account of the organization (undefined: no such account there). */
export async function findAccountOwner(
  db: Knex,
  organizationId: string,
  accountId: string,
): Promise<{ user_id: string } | undefined> {
  return db('accounts').where({ organization_id: organizationId, id: accountId }).first('user_id');
}

/** The status of each of the user's accounts in the organization, by type. */
export async function accountStatuses(
  db: Knex,
  organizationId: string,
  userId: string,
): Promise<Partial<Record<'current' | 'credit', string>>> {
  const rows: { type: string; status: string }[] = await db('accounts')
    .where({ organization_id: organizationId, user_id: userId })
    .select('type', 'status');
  return Object.fromEntries(rows.map((row) => [row.type.toLowerCase(), row.status]));
}

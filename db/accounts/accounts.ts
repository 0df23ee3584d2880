import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** A customer's accounts: a current account (deposits and payouts) and a credit account (loans). */
export interface CustomerAccounts {
  current: string;
  credit: string;
}

/** Opens a customer's current and credit accounts in `currency`. */
export async function openCustomerAccounts(
  db: Knex | Knex.Transaction,
  organizationId: string,
  userId: string,
  currency = 'KES',
): Promise<CustomerAccounts> {
  const accounts = { current: randomUUID(), credit: randomUUID() };
  await db('accounts').insert([
    { id: accounts.current, organization_id: organizationId, user_id: userId, type: 'CURRENT', currency },
    { id: accounts.credit, organization_id: organizationId, user_id: userId, type: 'CREDIT', currency },
  ]);
  return accounts;
}

/**
 * Locks an account for the rest of the database transaction, so two movements (payouts,
 * collateral holds) cannot both spend the same available money.
 */
export async function lockAccount(trx: Knex.Transaction, accountId: string): Promise<void> {
  await trx('accounts').where({ id: accountId }).forUpdate().first();
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

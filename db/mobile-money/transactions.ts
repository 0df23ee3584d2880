import type { Knex } from 'knex';
import { lockAccount } from '../accounts/accounts';
import { customerAccountSql, ledgerAccounts } from '../ledger/ledger';
import type { TransactionStatus, TransactionType } from '../../domain/mobile-money/transactions';

/** A transactions row as stored (money in minor units; bigint columns arrive as strings). */
export interface TransactionRow {
  id: string;
  resource_id: string;
  organization_id: string;
  account_id: string;
  type: TransactionType;
  status: TransactionStatus;
  amount: string | number;
  fee_amount: string | number;
  currency: string;
  mobile_number: string;
  details: Record<string, unknown>;
  callback_token: string;
  checkout_request_id: string | null;
  merchant_request_id: string | null;
  conversation_id: string | null;
  mobilemoney_transaction_id: string | null;
  result_code: string | null;
  failure_reason: string | null;
  provider_request_attempted_at: Date | null;
  /** When the provider reported a B2C queue timeout (noted by the callback route). */
  queue_timeout_at: Date | null;
  transacted_at: Date | null;
  confirmed_at: Date | null;
  posted_at: Date | null;
  failed_at: Date | null;
}

type Db = Knex | Knex.Transaction;

/**
 * A transaction by its id alone: for the run started for it (its business key, never a
 * caller's input) and for the provider's callbacks (which carry no organization; their URL's
 * unguessable token is checked against the row). Callers' reads go through the functions below,
 * which take the caller's organization first.
 */
export const findTransaction = (db: Db, id: string) =>
  db('transactions').where({ id }).first<TransactionRow | undefined>();

/** The same, locked for the rest of the database transaction. */
export const lockTransaction = (trx: Knex.Transaction, id: string) =>
  trx('transactions').where({ id }).forUpdate().first<TransactionRow | undefined>();

// ---------------------------------------------------------------------------------------------
// What callers ask

/** An account of the caller's with its owner's registered phone: the one money may move to or from. */
export interface MovementAccountRow {
  id: string;
  organization_id: string;
  user_id: string;
  type: 'CURRENT' | 'CREDIT';
  currency: string;
  status: string;
  owner_phone: string | null;
}
export function findOwnAccount(
  db: Knex,
  organizationId: string,
  userId: string,
  accountId: string,
): Promise<MovementAccountRow | undefined> {
  return db('accounts')
    .join('users', 'users.id', 'accounts.user_id')
    .where({ 'accounts.organization_id': organizationId, 'accounts.user_id': userId, 'accounts.id': accountId })
    .first<MovementAccountRow | undefined>('accounts.*', 'users.phone_number as owner_phone');
}

/** What a new transaction is created with (the rest starts empty). */
export type NewTransaction = Pick<
  TransactionRow,
  | 'id'
  | 'resource_id'
  | 'account_id'
  | 'type'
  | 'amount'
  | 'fee_amount'
  | 'currency'
  | 'mobile_number'
  | 'details'
  | 'callback_token'
  | 'transacted_at'
>;

/** Stores a new PENDING transaction; an existing one with the same id (an execution repeated under its Idempotency-Key) is answered instead. */
export async function createTransaction(
  db: Knex,
  organizationId: string,
  values: NewTransaction,
): Promise<TransactionRow> {
  const [row] = await db('transactions')
    .insert({ ...values, organization_id: organizationId, status: 'PENDING' })
    .onConflict('id')
    .ignore()
    .returning<TransactionRow[]>('*');
  return row ?? (await findTransaction(db, values.id))!;
}

/**
 * Removes a transaction whose run has not begun: still PENDING, no provider request attempted or
 * answered, nothing in the ledger (a payout's hold is placed under the account's lock, taken here
 * too). The API's way back when it could not start the run (Temporal down): the request then
 * leaves nothing behind. False when the run has begun after all (the start reached Temporal).
 */
export async function withdrawUnstarted(
  db: Knex,
  organizationId: string,
  transaction: Pick<TransactionRow, 'id' | 'account_id'>,
): Promise<boolean> {
  return db.transaction(async (trx) => {
    await lockAccount(trx, transaction.account_id);
    const removed = await trx('transactions')
      .where({
        organization_id: organizationId,
        id: transaction.id,
        status: 'PENDING',
        provider_request_attempted_at: null,
        checkout_request_id: null,
        conversation_id: null,
      })
      .whereNotExists(trx('journal_entries').where({ transaction_id: transaction.id }))
      .delete();
    return removed > 0;
  });
}

/**
 * A transaction by id or resource id with its account's owner, within the caller's organization
 * (null: a platform caller, every organization).
 */
export function findTransactionWithOwner(
  db: Knex,
  organizationId: string | null,
  idOrResourceId: string,
): Promise<(TransactionRow & { owner_id: string; account_type: string }) | undefined> {
  const query = db('transactions')
    .join('accounts', 'accounts.id', 'transactions.account_id')
    .where(
      idOrResourceId.startsWith('trx_')
        ? { 'transactions.resource_id': idOrResourceId }
        : { 'transactions.id': idOrResourceId },
    );
  if (organizationId !== null) query.where('transactions.organization_id', organizationId);
  return query.first<(TransactionRow & { owner_id: string; account_type: string }) | undefined>(
    'transactions.*',
    'accounts.user_id as owner_id',
    'accounts.type as account_type',
  );
}

// ---------------------------------------------------------------------------------------------
// What a run does to its own transaction (by its id: see findTransaction)

/** Claims the one attempt to send a push and reads the row in one statement; undefined when it was claimed before. */
export async function claimPushAttempt(db: Knex, id: string, now: Date): Promise<TransactionRow | undefined> {
  const [row] = await db('transactions')
    .where({ id, provider_request_attempted_at: null, checkout_request_id: null })
    .update({ provider_request_attempted_at: now })
    .returning<TransactionRow[]>('*');
  return row;
}

/** Records that a payout (or push) request is about to leave, so a retry knows it may have reached the provider. */
export async function recordAttempt(db: Knex, id: string, now: Date): Promise<void> {
  await db('transactions').where({ id }).update({ provider_request_attempted_at: now });
}

/** Certainly not sent (OAuth failed, connection refused, rate limited): the next attempt may send it. */
export async function forgetAttempt(db: Knex, id: string): Promise<void> {
  await db('transactions').where({ id }).update({ provider_request_attempted_at: null });
}

/** The provider's answer to a push or payout request: its ids. */
export async function recordProviderIds(
  db: Knex,
  id: string,
  ids: Partial<Pick<TransactionRow, 'checkout_request_id' | 'merchant_request_id' | 'conversation_id'>>,
  now: Date,
): Promise<void> {
  await db('transactions')
    .where({ id })
    .update({ ...ids, updated_at: now });
}

/** A PENDING transaction FAILED with its reason (nothing changes once it is final). */
export async function failPending(
  db: Db,
  id: string,
  reason: string,
  resultCode: string | undefined,
  now: Date,
): Promise<void> {
  await db('transactions')
    .where({ id, status: 'PENDING' })
    .update({
      status: 'FAILED',
      failure_reason: reason,
      result_code: resultCode ?? null,
      failed_at: now,
      updated_at: now,
    });
}

/** A PENDING push CONFIRMED with its receipt (runs started before a push was settled in one step). */
export async function confirmPending(db: Knex, id: string, receipt: string | undefined, now: Date): Promise<void> {
  await db('transactions')
    .where({ id, status: 'PENDING' })
    .update({
      status: 'CONFIRMED',
      mobilemoney_transaction_id: receipt ?? null,
      result_code: '0',
      confirmed_at: now,
      updated_at: now,
    });
}

/**
 * A PENDING or CONFIRMED push made POSTED with its receipt and the push id that proved it (each
 * kept if already set; both unique), and its COLLECTION entry posted (the provider's clearing
 * account pays the customer's account), in one statement: atomic, and one round trip rather than
 * a transaction's four. The transaction's status afterwards (undefined when there is none):
 * POSTED here or before, or the state that kept it from being posted.
 */
export async function settleCollection(
  db: Knex,
  id: string,
  proof: { receipt?: string; checkoutRequestId?: string },
  now: Date,
): Promise<TransactionStatus | undefined> {
  const { rows } = await db.raw<{ rows: { status: TransactionStatus | null; posted: boolean }[] }>(
    `with settled as (
       update transactions
          set status = 'POSTED',
              mobilemoney_transaction_id = coalesce(?, mobilemoney_transaction_id),
              checkout_request_id = coalesce(checkout_request_id, ?),
              result_code = '0',
              confirmed_at = coalesce(confirmed_at, ?),
              posted_at = ?,
              updated_at = ?
        where id = ? and status in ('PENDING', 'CONFIRMED')
        returning id, account_id, amount, currency
     ), entry as (
       insert into journal_entries (transaction_id, kind, currency)
       select id, 'COLLECTION', currency from settled
       on conflict (transaction_id, kind) do nothing
       returning id
     ), legs as (
       insert into ledger_legs (journal_entry_id, leg, ledger_account, amount)
       select entry.id, leg.n, leg.account, leg.amount
         from entry, settled,
              lateral (values (1, ?, settled.amount), (2, ${customerAccountSql('settled.account_id::text')}, -settled.amount))
                as leg(n, account, amount)
     )
     select exists (select 1 from settled) as posted, (select status from transactions where id = ?) as status`,
    [proof.receipt ?? null, proof.checkoutRequestId ?? null, now, now, now, id, ledgerAccounts.collections, id],
  );
  const [row] = rows;
  if (row?.posted) return 'POSTED';
  // Not posted, yet payable in the statement's snapshot: a concurrent settlement held the row and
  // has posted it since (the update waited for it); a new statement sees what it left.
  if (row?.status === 'PENDING' || row?.status === 'CONFIRMED') return (await findTransaction(db, id))?.status;
  return row?.status ?? undefined;
}

/** A CONFIRMED push made POSTED (runs started before a push was settled in one step). */
export async function markPosted(trx: Knex.Transaction, id: string, now: Date): Promise<void> {
  await trx('transactions').where({ id }).update({ status: 'POSTED', posted_at: now, updated_at: now });
}

/** A payout made POSTED with the provider's receipt and conversation. */
export async function markPayoutPosted(
  trx: Knex.Transaction,
  id: string,
  result: { receipt?: string; conversationId: string | null },
  now: Date,
): Promise<void> {
  await trx('transactions')
    .where({ id })
    .update({
      status: 'POSTED',
      mobilemoney_transaction_id: result.receipt ?? null,
      conversation_id: result.conversationId,
      result_code: '0',
      confirmed_at: now,
      posted_at: now,
      updated_at: now,
    });
}

/** Whether a receipt is recorded on a transaction other than `exceptId` (receipts are unique). */
export async function receiptTaken(db: Knex, receipt: string, exceptId: string): Promise<boolean> {
  return (
    (await db('transactions').where({ mobilemoney_transaction_id: receipt }).whereNot({ id: exceptId }).first('id')) !==
    undefined
  );
}

/**
 * A transaction, with whether the push id and the receipt a callback to it names are already
 * another transaction's (each false when not given): what the push callback checks, in one read.
 */
export async function findTransactionNaming(
  db: Knex,
  id: string,
  names: { checkoutRequestId?: string; receipt?: string },
): Promise<(TransactionRow & { checkout_request_taken: boolean; receipt_taken: boolean }) | undefined> {
  const taken = (column: string, value: string | undefined) =>
    db.raw(`exists (select 1 from transactions o where o.${column} = ? and o.id <> t.id)`, [value ?? null]);
  return db('transactions as t')
    .where('t.id', id)
    .first(
      't.*',
      taken('checkout_request_id', names.checkoutRequestId).wrap('(', ') as checkout_request_taken'),
      taken('mobilemoney_transaction_id', names.receipt).wrap('(', ') as receipt_taken'),
    );
}

import type { Knex } from 'knex';
import { isUuid } from '../../domain/identifiers';

/**
 * The double-entry ledger for mobile money (tables in migration 20261122050000_ledger). Amounts
 * are integer minor units (cents of KES): a debit is positive, a credit negative, and every
 * journal entry's legs sum to zero. The database enforces the same rules at commit (deferred
 * constraint triggers) and keeps both tables append-only: corrections are new entries.
 */

/** Ledger account names. Customer accounts are liabilities of ours: a credit increases them. */
const CUSTOMER = 'customer:';
export const ledgerAccounts = {
  /** The customer's available money. */
  customer: (accountId: string) => `${CUSTOMER}${accountId}`,
  /** Money held for a payout in flight. */
  hold: (accountId: string) => `hold:${accountId}`,
  /** Money held as a loan's collateral until the loan is repaid. */
  collateral: (accountId: string) => `collateral:${accountId}`,
  /** What a borrower owes us on a loan (an asset of ours: a debit increases it). */
  loanReceivable: (loanId: string) => `loan:${loanId}`,
  /** Interest a borrower owes us, recognised at disbursement (flat rate: known from the start). */
  interestReceivable: (loanId: string) => `loan-interest:${loanId}`,
  interestIncome: 'income:loan-interest',
  /** Penalties charged on a loan and not yet paid (an asset of ours). */
  penaltyReceivable: (loanId: string) => `loan-penalty:${loanId}`,
  penaltyIncome: 'income:loan-penalties',
  /** Penalties and interest an operator forgave. */
  waiversExpense: 'expense:loan-waivers',
  /** Reversed repayments: money owed back to the payer. */
  reversalsPayable: 'payable:repayment-reversals',
  /** Clearing: money collected through push prompts. */
  collections: 'mobile-money:collections',
  /** Clearing: money sent through B2C. */
  disbursements: 'mobile-money:disbursements',
  feeIncome: 'income:mobile-money-fees',
};

/** One leg of an entry, in minor units; debit > 0, credit < 0. */
export interface Leg {
  account: string;
  amount: number;
}

/** Per transaction (a loan's id for a loan's own entries), at most one entry of each kind. */
export type JournalKind =
  | 'COLLECTION'
  | 'HOLD'
  | 'PAYOUT'
  | 'RELEASE'
  | 'COLLATERAL_HOLD'
  | 'COLLATERAL_RELEASE'
  | 'DISBURSEMENT'
  | 'INTEREST'
  | 'REPAYMENT'
  | 'REVERSAL'
  | 'WAIVER'
  | 'PENALTY';

const JOURNAL_KINDS: readonly JournalKind[] = [
  'COLLECTION',
  'HOLD',
  'PAYOUT',
  'RELEASE',
  'COLLATERAL_HOLD',
  'COLLATERAL_RELEASE',
  'DISBURSEMENT',
  'INTEREST',
  'REPAYMENT',
  'REVERSAL',
  'WAIVER',
  'PENALTY',
];
const CURRENCY = /^[A-Z]{3}$/;
/** ledger_legs.leg is a smallint. */
const MAX_LEGS = 32767;

/** Throws a descriptive Error unless the entry is well formed and balanced. Touches nothing. */
function validateEntry(entry: { transactionId: string; kind: JournalKind; currency: string; legs: Leg[] }): void {
  const where = `journal entry ${String(entry.kind)} for transaction ${String(entry.transactionId)}`;
  if (typeof entry.transactionId !== 'string' || !isUuid(entry.transactionId)) {
    throw new Error(`${where}: transactionId must be a uuid`);
  }
  if (!JOURNAL_KINDS.includes(entry.kind)) throw new Error(`${where}: kind must be one of ${JOURNAL_KINDS.join(', ')}`);
  if (typeof entry.currency !== 'string' || !CURRENCY.test(entry.currency)) {
    throw new Error(`${where}: currency must be a three-letter ISO 4217 code, got ${JSON.stringify(entry.currency)}`);
  }
  if (!Array.isArray(entry.legs) || entry.legs.length < 2) {
    throw new Error(
      `${where}: an entry needs at least two legs, got ${Array.isArray(entry.legs) ? entry.legs.length : 'none'}`,
    );
  }
  if (entry.legs.length > MAX_LEGS)
    throw new Error(`${where}: too many legs (${entry.legs.length}, at most ${MAX_LEGS})`);
  let sum = 0n; // exact: the sum of safe integers need not be one
  entry.legs.forEach((leg, index) => {
    if (typeof leg.account !== 'string' || leg.account.length === 0) {
      throw new Error(`${where}: leg ${index + 1} has no account`);
    }
    if (typeof leg.amount !== 'number' || !Number.isSafeInteger(leg.amount)) {
      throw new Error(
        `${where}: leg ${index + 1} (${leg.account}) amount ${String(leg.amount)} is not a safe integer number of minor units`,
      );
    }
    if (leg.amount === 0) throw new Error(`${where}: leg ${index + 1} (${leg.account}) has a zero amount`);
    sum += BigInt(leg.amount);
  });
  if (sum !== 0n) throw new Error(`${where}: unbalanced, the legs sum to ${sum} (debits must equal credits)`);
}

/**
 * Posts one balanced entry inside the caller's knex transaction; false (and nothing written)
 * when this transaction already has an entry of this kind. The entry is validated first and a
 * malformed one throws before anything reaches the database. A concurrent post of the same
 * (transactionId, kind) waits for the other and then writes nothing (on conflict do nothing).
 */
export async function postJournal(
  trx: Knex.Transaction,
  entry: { transactionId: string; kind: JournalKind; currency: string; legs: Leg[] },
): Promise<boolean> {
  if (!trx || (trx as { isTransaction?: boolean }).isTransaction !== true) {
    throw new Error('postJournal must be called inside a knex transaction (db.transaction(...))');
  }
  validateEntry(entry);
  // The entry and its legs in one round trip: no legs are written when the entry already exists.
  const { rows } = await trx.raw<{ rows: { inserted: boolean }[] }>(
    `with entry as (
       insert into journal_entries (transaction_id, kind, currency) values (?, ?, ?)
       on conflict (transaction_id, kind) do nothing
       returning id
     ), legs as (
       insert into ledger_legs (journal_entry_id, leg, ledger_account, amount)
       select entry.id, leg.ordinality, leg.value ->> 'account', (leg.value ->> 'amount')::bigint
         from entry, jsonb_array_elements(?::jsonb) with ordinality as leg(value, ordinality)
     )
     select exists (select 1 from entry) as inserted`,
    [
      entry.transactionId,
      entry.kind,
      entry.currency,
      JSON.stringify(entry.legs.map((leg) => ({ account: leg.account, amount: String(leg.amount) }))),
    ],
  );
  return rows[0]!.inserted;
}

/**
 * The customer ledger account (ledgerAccounts.customer) of an accounts.id column, in SQL: for a
 * statement that posts an entry for the row it writes, in one round trip.
 */
export const customerAccountSql = (column: string) => `'${CUSTOMER}' || ${column}`;

/** pg returns bigint and numeric as strings; a value beyond 2^53 would lose cents, so it throws. */
function toMinorUnits(value: unknown, what: string): number {
  if (value === null || value === undefined) return 0;
  const number = Number(value);
  if (!Number.isSafeInteger(number))
    throw new Error(`${what} ${String(value)} is not a safe integer number of minor units`);
  return number;
}

/**
 * balance = what the customer owns incl. held money; held = in hold for payouts or as a loan's
 * collateral; available = balance - held. All minor units. Customer accounts are liabilities, so
 * a credit (negative leg) increases them.
 */
export async function accountBalance(
  db: Knex | Knex.Transaction,
  accountId: string,
): Promise<{ balance: number; held: number; available: number }> {
  const customer = ledgerAccounts.customer(accountId);
  const hold = ledgerAccounts.hold(accountId);
  const collateral = ledgerAccounts.collateral(accountId);
  const rows: { ledger_account: string; total: string | null }[] = await db('ledger_legs')
    .select('ledger_account')
    .sum({ total: 'amount' })
    .whereIn('ledger_account', [customer, hold, collateral])
    .groupBy('ledger_account');
  const total = (account: string) => {
    const row = rows.find((r) => r.ledger_account === account);
    const sum = toMinorUnits(row?.total, `ledger account ${account} total`);
    return sum === 0 ? 0 : -sum; // a credit balance is money the customer has
  };
  const available = total(customer);
  const held = total(hold) + total(collateral);
  const balance = available + held;
  if (!Number.isSafeInteger(balance)) throw new Error(`balance of account ${accountId} is beyond a safe integer`);
  return { balance, held, available };
}

/** Every entry sums to zero and so does the whole ledger per currency; used by tests. */
export async function ledgerIsBalanced(db: Knex): Promise<boolean> {
  const { rows: badEntries } = await db.raw<{ rows: unknown[] }>(`
    select e.id
      from journal_entries e
      left join ledger_legs l on l.journal_entry_id = e.id
     group by e.id
    having count(l.leg) < 2 or coalesce(sum(l.amount), 0) <> 0
     limit 1
  `);
  if (badEntries.length > 0) return false;
  const { rows: badCurrencies } = await db.raw<{ rows: unknown[] }>(`
    select e.currency
      from journal_entries e
      join ledger_legs l on l.journal_entry_id = e.id
     group by e.currency
    having sum(l.amount) <> 0
     limit 1
  `);
  if (badCurrencies.length > 0) return false;
  // Legs whose entry is gone would escape both checks above (the foreign key forbids them).
  const { rows: orphans } = await db.raw<{ rows: unknown[] }>(`
    select 1 from ledger_legs l where not exists (select 1 from journal_entries e where e.id = l.journal_entry_id) limit 1
  `);
  return orphans.length === 0;
}

/** Whether a transaction has a journal entry of this kind. */
export async function hasJournalEntry(
  db: Knex | Knex.Transaction,
  transactionId: string,
  kind: JournalKind,
): Promise<boolean> {
  return (await db('journal_entries').where({ transaction_id: transactionId, kind }).first('id')) !== undefined;
}

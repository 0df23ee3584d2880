import type { Knex } from 'knex';

/**
 * The consistency checks the chaos suites run against Postgres once the load has settled: each
 * counts what a risk team would call a defect, and each is 0 in a healthy ledger. They read the
 * whole database (a chaos run has one of its own), or, for the operations still in flight, the
 * ids a suite started. Amounts are minor units; a "held" amount is what a hold or collateral
 * ledger account owes back (the negative of its legs' sum: holding credits it).
 */

/** One number per check; every one of them is expected to be 0. */
export interface ConsistencyReport {
  /** Journal entries beyond one per (transaction, kind): money posted twice. */
  doublePostings: number;
  /** Holds not ended as they should be: payout holds and loan collateral (see holdsLeft). */
  holdsLeft: number;
  /** Transactions and loans whose journal entries contradict their status or amount. */
  postingsNotMatching: number;
  /** Repayments whose allocations do not add up to what was paid (see allocationsNotMatching). */
  allocationsNotMatching: number;
  /** The sum of every ledger leg. */
  ledgerTotal: number;
  /** Operations not in a final state (see operationsNotFinal), all kinds together. */
  notFinal: number;
}

/** The ids of what a suite started, by kind; a kind left out is counted over the whole table. */
export interface OperationScope {
  transactions?: readonly string[];
  kycApplications?: readonly string[];
  loanApplications?: readonly string[];
  activations?: readonly string[];
}

const number = async (db: Knex, sql: string, bindings: readonly Knex.RawBinding[] = []) =>
  Number((((await db.raw(sql, bindings)) as { rows: { n: string | null }[] }).rows[0]?.n ?? 0) || 0);

/** Debit side of every journal entry (a balanced entry's size), by transaction and kind. */
const ENTRIES = `entries as (
  select j.transaction_id, j.kind, sum(l.amount) filter (where l.amount > 0) as debit
    from journal_entries j join ledger_legs l on l.journal_entry_id = j.id
   group by j.id, j.transaction_id, j.kind)`;

/** Entries beyond one per (transaction, kind). The unique key forbids them; this proves it held. */
export function doublePostings(db: Knex): Promise<number> {
  return number(
    db,
    `select coalesce(sum(n - 1), 0) as n
       from (select count(*) as n from journal_entries group by transaction_id, kind having count(*) > 1) d`,
  );
}

/** The sum of every ledger leg: 0 in a double-entry ledger. */
export function ledgerTotal(db: Knex): Promise<number> {
  return number(db, 'select coalesce(sum(amount), 0) as n from ledger_legs');
}

/**
 * Holds left behind:
 * - a final payout whose HOLD was not ended by exactly one PAYOUT or RELEASE;
 * - an account whose `hold:` balance differs from what its payouts in flight hold;
 * - an account whose `collateral:` balance differs from the collateral of its open loans
 *   (a repaid loan's collateral released, an open one's still held).
 */
export async function holdsLeft(db: Knex): Promise<number> {
  const unended = await number(
    db,
    `select count(*) as n from transactions t
      where t.type = 'SEND_MONEY' and t.status in ('POSTED', 'FAILED')
        and exists (select 1 from journal_entries j where j.transaction_id = t.id and j.kind = 'HOLD')
        and (select count(*) from journal_entries j
              where j.transaction_id = t.id and j.kind in ('PAYOUT', 'RELEASE')) <> 1`,
  );
  const heldMismatch = (prefix: string, expected: string) =>
    number(
      db,
      `with held as (
         select substr(ledger_account, ${prefix.length + 1})::uuid as account_id, -sum(amount) as amount
           from ledger_legs where ledger_account like '${prefix}%' group by ledger_account),
       expected as (${expected})
       select count(*) as n
         from held h full join expected e on e.account_id = h.account_id
        where coalesce(h.amount, 0) <> coalesce(e.amount, 0)`,
    );
  const payoutHolds = await heldMismatch(
    'hold:',
    `select t.account_id, sum(t.amount + t.fee_amount) as amount from transactions t
      where t.type = 'SEND_MONEY' and t.status in ('PENDING', 'CONFIRMED')
        and exists (select 1 from journal_entries j where j.transaction_id = t.id and j.kind = 'HOLD')
        and not exists (select 1 from journal_entries j where j.transaction_id = t.id and j.kind in ('PAYOUT', 'RELEASE'))
      group by t.account_id`,
  );
  const collateral = await heldMismatch(
    'collateral:',
    `select current_account_id as account_id, sum(collateral_amount) as amount from loans
      where status in ('PENDING_DISBURSEMENT', 'ACTIVE') group by current_account_id`,
  );
  return unended + payoutHolds + collateral;
}

/**
 * Postings that contradict what they post for:
 * - a push is POSTED exactly when it has its COLLECTION, of its amount, and has no payout entry;
 * - a payout has no COLLECTION; POSTED means HOLD and PAYOUT and no RELEASE; FAILED means no
 *   PAYOUT and a RELEASE exactly when there was a HOLD; in flight, neither PAYOUT nor RELEASE;
 *   each of its entries is of its amount and fee;
 * - a loan is disbursed (ACTIVE, REPAID) exactly when its DISBURSEMENT of the principal exists,
 *   and its collateral hold is there, of its amount, exactly when it has collateral.
 */
export function postingsNotMatching(db: Knex): Promise<number> {
  return number(
    db,
    `with ${ENTRIES},
     per_transaction as (
       select t.id, t.type, t.status, t.amount, t.fee_amount,
              max(e.debit) filter (where e.kind = 'COLLECTION') as collection,
              max(e.debit) filter (where e.kind = 'HOLD') as hold,
              max(e.debit) filter (where e.kind = 'PAYOUT') as payout,
              max(e.debit) filter (where e.kind = 'RELEASE') as release
         from transactions t left join entries e on e.transaction_id = t.id
        group by t.id),
     per_loan as (
       select l.id, l.status, l.principal, l.collateral_amount,
              max(e.debit) filter (where e.kind = 'DISBURSEMENT') as disbursement,
              max(e.debit) filter (where e.kind = 'COLLATERAL_HOLD') as collateral
         from loans l left join entries e on e.transaction_id = l.id
        group by l.id)
     select (select count(*) from per_transaction
              where (type = 'STK_PUSH' and (
                       (status = 'POSTED') <> (collection is not null)
                       or collection <> amount
                       or coalesce(hold, payout, release) is not null))
                 or (type = 'SEND_MONEY' and (
                       collection is not null
                       or (status = 'POSTED' and (hold is null or payout is null or release is not null))
                       or (status = 'FAILED' and (payout is not null or (hold is null) <> (release is null)))
                       or (status in ('PENDING', 'CONFIRMED') and coalesce(payout, release) is not null)
                       or hold <> amount + fee_amount or payout <> amount + fee_amount
                       or release <> amount + fee_amount)))
          + (select count(*) from per_loan
              where (status in ('ACTIVE', 'REPAID')) <> (disbursement is not null)
                 or disbursement <> principal
                 or (collateral_amount > 0) <> (collateral is not null)
                 or collateral <> collateral_amount) as n`,
  );
}

/**
 * Repayments (pushes on a credit account) whose allocation does not match the payment: a POSTED
 * one needs exactly its REPAYMENT event, of the push's amount, whose live allocation records
 * sum to the event's allocated amount, as does its REPAYMENT journal entry; a push that is not
 * POSTED has no event at all. (Run it once repayments settled: an unallocated posted push counts.)
 */
export function allocationsNotMatching(db: Knex): Promise<number> {
  return number(
    db,
    `with ${ENTRIES},
     repayments as (
       select e.transaction_id, e.amount, e.allocated_amount,
              (select coalesce(sum(x.allocated_amount), 0) from installment_allocations x
                where x.event_id = e.id and x.source = 'LIVE') as records,
              coalesce((select debit from entries j where j.transaction_id = e.transaction_id and j.kind = 'REPAYMENT'), 0)
                as posted
         from loan_transactions e where e.kind = 'REPAYMENT')
     select count(*) as n
       from transactions t
       join accounts a on a.id = t.account_id and a.type = 'CREDIT'
       left join repayments r on r.transaction_id = t.id
      where t.type = 'STK_PUSH'
        and case when t.status = 'POSTED'
                 then r.transaction_id is null or r.amount <> t.amount
                      or r.records <> r.allocated_amount or r.posted <> r.allocated_amount
                 else r.transaction_id is not null end`,
  );
}

/** Operations not in a final state, by kind (a posted repayment is final once allocated). */
export interface NotFinal {
  transactions: number;
  repayments: number;
  kycApplications: number;
  loanApplications: number;
  activations: number;
}

/**
 * What is still in flight: transactions PENDING or CONFIRMED; repayments POSTED but not allocated;
 * KYC applications ID_VERIFICATION_PENDING; loan applications taken but not disbursed (ACCEPTED,
 * or a loan PENDING_DISBURSEMENT); activations INITIALIZING, AWAITING_OTP or ONBOARDING. Within
 * `scope` when given (repayments within its transactions).
 */
export async function operationsNotFinal(db: Knex, scope: OperationScope = {}): Promise<NotFinal> {
  const within = (column: string, ids: readonly string[] | undefined): [string, Knex.RawBinding[]] =>
    ids ? [` and ${column} = any(?::uuid[])`, [[...ids]]] : ['', []];
  const count = (sql: string, [filter, bindings]: [string, Knex.RawBinding[]]) =>
    number(db, `${sql}${filter}`, bindings);
  return {
    transactions: await count(
      `select count(*) as n from transactions t where t.status in ('PENDING', 'CONFIRMED')`,
      within('t.id', scope.transactions),
    ),
    repayments: await count(
      `select count(*) as n from transactions t join accounts a on a.id = t.account_id and a.type = 'CREDIT'
        where t.type = 'STK_PUSH' and t.status = 'POSTED'
          and not exists (select 1 from loan_transactions e where e.transaction_id = t.id)`,
      within('t.id', scope.transactions),
    ),
    kycApplications: await count(
      `select count(*) as n from kyc_applications k where k.status = 'ID_VERIFICATION_PENDING'`,
      within('k.id', scope.kycApplications),
    ),
    loanApplications: await count(
      `select count(*) as n from loan_applications p
        where (p.status = 'ACCEPTED'
               or exists (select 1 from loans l where l.application_id = p.id and l.status = 'PENDING_DISBURSEMENT'))`,
      within('p.id', scope.loanApplications),
    ),
    activations: await count(
      `select count(*) as n from current_account_activations c
        where c.status in ('INITIALIZING', 'AWAITING_OTP', 'ONBOARDING')`,
      within('c.id', scope.activations),
    ),
  };
}

/** Every check at once; `scope` narrows the operations in flight to what a suite started. */
export async function checkConsistency(db: Knex, scope: OperationScope = {}): Promise<ConsistencyReport> {
  const notFinal = await operationsNotFinal(db, scope);
  return {
    doublePostings: await doublePostings(db),
    holdsLeft: await holdsLeft(db),
    postingsNotMatching: await postingsNotMatching(db),
    allocationsNotMatching: await allocationsNotMatching(db),
    ledgerTotal: await ledgerTotal(db),
    notFinal: Object.values(notFinal).reduce((sum, n) => sum + n, 0),
  };
}

/**
 * Where transactions still in flight stand, one line each (at most `limit`), to begin a diagnosis
 * with: what is known of the provider's answer, the journal entries, the callbacks' dispositions
 * and notes. Never a token or a body.
 */
export async function describeInFlight(db: Knex, transactionIds: readonly string[], limit = 10): Promise<string[]> {
  const rows = (await db('transactions as t')
    .whereIn('t.id', [...transactionIds])
    .whereIn('t.status', ['PENDING', 'CONFIRMED'])
    .orderBy('t.created_at')
    .limit(limit)
    .select(
      't.id',
      't.type',
      't.status',
      db.raw('t.provider_request_attempted_at is not null as attempted'),
      db.raw('coalesce(t.conversation_id, t.checkout_request_id) is not null as answered'),
      db.raw(
        `(select string_agg(kind, ',' order by created_at) from journal_entries j where j.transaction_id = t.id) as kinds`,
      ),
      db.raw(
        `(select string_agg(c.disposition || coalesce(' (' || c.note || ')', ''), '; ' order by c.id)
            from mobile_money_callbacks c where c.transaction_ref = t.id::text) as callbacks`,
      ),
    )) as {
    id: string;
    type: string;
    status: string;
    attempted: boolean;
    answered: boolean;
    kinds: string | null;
    callbacks: string | null;
  }[];
  return rows.map(
    (r) =>
      `${r.type} ${r.id} ${r.status}: request ${r.attempted ? 'sent' : 'not sent'}, its answer ` +
      `${r.answered ? 'recorded' : 'unknown'}, entries ${r.kinds ?? 'none'}, callbacks ${r.callbacks ?? 'none'}`,
  );
}

/** A line of a suite's table: its figure, and whether 0 is expected of it. */
export interface Figure {
  name: string;
  value: number;
  expectZero?: boolean;
  /** What a missed zero was made of, kept in the summary run.ts prints last (a CI log's tail). */
  detail?: string;
}

/** Every figure that missed its expected zero in this process, for the summary run.ts prints last. */
export const missedFigures: string[] = [];

/** Prints a suite's figures, one a line, each expected zero marked ok or NOT 0; true when all held. */
export function printFigures(title: string, figures: readonly Figure[]): boolean {
  console.log(`\n${title}`);
  for (const f of figures)
    if (f.expectZero && f.value !== 0) missedFigures.push(`${f.name}: ${f.value}${f.detail ? ` [${f.detail}]` : ''}`);
  const width = Math.max(...figures.map((f) => f.name.length));
  for (const f of figures) {
    const verdict = f.expectZero ? (f.value === 0 ? '  (0 expected) ok' : '  (0 expected) NOT 0') : '';
    console.log(`  ${f.name.padEnd(width)} ${String(f.value).padStart(7)}${verdict}`);
  }
  return figures.every((f) => !f.expectZero || f.value === 0);
}

import type { Knex } from 'knex';
import type { TransactionRow } from '../mobile-money/transactions';
import { preparedRows } from '../prepared';

/**
 * The lending account's transaction events and their allocation records, read for the two
 * installment transaction lists (spec 4.3). Pages are keyset queries on the events' `seq`
 * (newest first), never OFFSET: `after` reads older events than the cursor, `before` newer
 * ones; a page costs the same wherever it sits in a long history.
 */
export interface EventRow {
  id: string;
  seq: string;
  resource_id: string;
  account_id: string;
  kind: 'REPAYMENT' | 'REVERSAL' | 'WAIVER';
  reverses_id: string | null;
  loan_id: string | null;
  amount: string;
  currency: string;
  reason: string | null;
  created_at: Date;
  /** The push, for a repayment. */
  push: TransactionRow | null;
}

export interface AllocationRow {
  id: string;
  event_id: string;
  seq: string;
  installment_id: string;
  loan_id: string;
  position: number;
  allocated_amount: string;
  principal_amount: string;
  interest_amount: string;
  arrears_amount: string;
  effect: string;
  source: string;
  allocated_at: Date;
}

export interface PageQuery {
  size: number;
  /** Exclusive bounds on seq: `after` pages towards older events, `before` towards newer. */
  after?: bigint;
  before?: bigint;
}

export interface Page<T> {
  rows: T[];
  /** Whether older rows exist past the page's last, and newer ones before its first. */
  older: boolean;
  newer: boolean;
}

/**
 * What the caller must be allowed for a page to be answered, checked in the page's own statement
 * (the page is joined to it: a refused statement returns no row of the page): an SQL expression
 * naming what is missing ('account', 'installment'), null when nothing is.
 */
export interface Gate {
  sql: string;
  bindings: readonly Knex.Value[];
}
/** A page not read: what the gate found missing. */
export interface Refused {
  refused: string;
}

/**
 * Whether `accountId` is the organization's and readable by the caller (`ownerId`: only that
 * user's; undefined: any of the organization's), then whether `installmentId` is the account's.
 */
export function accountGate(organizationId: string, accountId: string, ownerId?: string, installmentId?: string): Gate {
  const account = `not exists (select 1 from accounts where organization_id = ? and id = ? and (?::uuid is null or user_id = ?::uuid))`;
  const installment = `(?::uuid is not null and not exists
    (select 1 from installments where organization_id = ? and account_id = ? and id = ?::uuid))`;
  return {
    sql: `case when ${account} then 'account' when ${installment} then 'installment' end`,
    bindings: [
      organizationId,
      accountId,
      ownerId ?? null,
      ownerId ?? null,
      installmentId ?? null,
      organizationId,
      accountId,
      installmentId ?? null,
    ],
  };
}

/** What `gate` finds missing, asked on its own (a request refused before its page is read). */
export async function gateRefusal(db: Knex, gate: Gate): Promise<string | undefined> {
  const { rows } = await db.raw<{ rows: { refused: string | null }[] }>(`select ${gate.sql} as refused`, gate.bindings);
  return rows[0]?.refused ?? undefined;
}

/**
 * One keyset page of `base` (already filtered) by seq, newest first, with both neighbours known,
 * in one statement: the page (one index range, `size + 1` rows: the extra one tells whether the
 * far side goes on), and an EXISTS probe one row past its near end. `extra` adds columns read per
 * page row (the outer query sees the page as `page`). Round trips, not rows, are what a page
 * costs here: a socket write is the largest share of a request's CPU (see README, Benchmarks).
 */
async function keysetPage<T extends { seq: string }>(
  db: Knex,
  base: () => Knex.QueryBuilder,
  seqColumn: string,
  page: PageQuery,
  select: (q: Knex.QueryBuilder) => Knex.QueryBuilder,
  gate: Gate,
  extra: (string | Knex.Raw)[] = [],
): Promise<Page<T> | Refused> {
  const towardsNewer = page.before !== undefined;
  const q = base();
  if (page.after !== undefined) q.where(seqColumn, '<', page.after.toString());
  if (page.before !== undefined) q.where(seqColumn, '>', page.before.toString());
  // The near neighbour: the first row past the page's near end, walked from there in the index
  // (ordered with a limit: as a bare EXISTS the planner, not knowing the bound, may scan the table).
  const near = towardsNewer ? '<' : '>';
  const probe = base()
    .whereRaw(`${seqColumn} ${near} (select ${towardsNewer ? 'min' : 'max'}(seq) from page)`)
    .orderBy(seqColumn, towardsNewer ? 'desc' : 'asc')
    .limit(1)
    .select(db.raw('1'));
  // Prepared: planning this statement costs about as much as running it, and its plan (index
  // ranges on the account's or installment's seq) does not hang on the values.
  // The gate's one row, joined to the page only when it refuses nothing: a refused read is one
  // row of nulls, an empty page one row with no seq.
  const fetched = await preparedRows<T & { near: boolean; refused: string | null }>(
    db,
    db
      .with('page', select(q.orderBy(seqColumn, towardsNewer ? 'asc' : 'desc').limit(page.size + 1)))
      .from(db.raw(`(select ${gate.sql} as refused) as g`, gate.bindings))
      .leftJoin('page', function () {
        this.on(db.raw('g.refused is null'));
      })
      .select('g.refused', 'page.*', db.raw('(?) is not null as near', [probe]), ...extra)
      .orderBy('page.seq', towardsNewer ? 'asc' : 'desc'),
  );
  const refused = fetched[0]?.refused;
  if (refused) return { refused };
  const found = fetched.filter((row) => row.seq !== null);
  const more = found.length > page.size;
  const nearExists = found[0]?.near ?? false;
  const rows: T[] = found.slice(0, page.size).map(({ near: _, refused: __, ...row }) => row as unknown as T);
  if (towardsNewer) rows.reverse();
  if (rows.length === 0) return { rows, older: false, newer: false };
  return towardsNewer ? { rows, older: nearExists, newer: more } : { rows, older: more, newer: nearExists };
}

/** The push's fields the Transaction view reads (never the whole row: it holds the callback token). */
const PUSH = `case when t.id is null then null else json_build_object(
  'id', t.id, 'resource_id', t.resource_id, 'status', t.status, 'mobilemoney_transaction_id', t.mobilemoney_transaction_id,
  'amount', t.amount, 'fee_amount', t.fee_amount, 'currency', t.currency, 'failure_reason', t.failure_reason,
  'transacted_at', t.transacted_at, 'confirmed_at', t.confirmed_at, 'posted_at', t.posted_at, 'failed_at', t.failed_at,
  'details', t.details) end as push`;
const EVENT = `json_build_object('id', e.id, 'seq', e.seq::text, 'resource_id', e.resource_id, 'account_id', e.account_id,
  'kind', e.kind, 'reverses_id', e.reverses_id, 'loan_id', e.loan_id, 'amount', e.amount::text, 'currency', e.currency,
  'reason', e.reason, 'created_at', e.created_at) as event`;

const eventColumns = (db: Knex) => [
  'e.id',
  'e.seq',
  'e.resource_id',
  'e.account_id',
  'e.kind',
  'e.reverses_id',
  'e.loan_id',
  'e.amount',
  'e.currency',
  'e.reason',
  'e.created_at',
  db.raw(PUSH),
];

/** A page of an account's events, each with its allocation records (in position order). */
export async function accountEventsPage(
  db: Knex,
  organizationId: string,
  accountId: string,
  page: PageQuery,
  gate: Gate,
): Promise<Page<EventRow & { allocations: AllocationRow[] }> | Refused> {
  const result = await keysetPage<EventRow & { allocations: (AllocationRow & { allocated_at: string })[] }>(
    db,
    () => db('loan_transactions as e').where({ 'e.organization_id': organizationId, 'e.account_id': accountId }),
    'e.seq',
    page,
    (q) => q.leftJoin('transactions as t', 't.id', 'e.transaction_id').select(eventColumns(db)),
    gate,
    [
      db.raw(
        `coalesce((select json_agg(a order by a.loan_id, a.position) from installment_allocations a
                    where a.organization_id = ? and a.event_id = page.id), '[]'::json) as allocations`,
        [organizationId],
      ),
    ],
  );
  if ('refused' in result) return result;
  return {
    ...result,
    rows: result.rows.map((row) => ({
      ...row,
      push: reviveDates(row.push),
      allocations: row.allocations.map((a) => ({ ...a, allocated_at: new Date(a.allocated_at) })),
    })),
  };
}

/** A page of one installment's allocation records, each with its event. */
export async function installmentAllocationsPage(
  db: Knex,
  organizationId: string,
  installmentId: string,
  page: PageQuery,
  gate: Gate,
): Promise<Page<AllocationRow & { event: EventRow }> | Refused> {
  const result = await keysetPage<AllocationRow & { event: Record<string, unknown>; push: unknown }>(
    db,
    () =>
      db('installment_allocations as a').where({
        'a.organization_id': organizationId,
        'a.installment_id': installmentId,
      }),
    'a.seq',
    page,
    (q) =>
      q
        .join('loan_transactions as e', 'e.id', 'a.event_id')
        .leftJoin('transactions as t', 't.id', 'e.transaction_id')
        .select('a.*', db.raw(EVENT), db.raw(PUSH)),
    gate,
  );
  if ('refused' in result) return result;
  return {
    ...result,
    rows: result.rows.map((row) => {
      const { event, push, ...allocation } = row;
      return {
        ...allocation,
        event: {
          ...(event as unknown as EventRow),
          created_at: new Date(event.created_at as string),
          push: reviveDates(push),
        },
      };
    }),
  };
}

/** A push read as JSON carries its timestamps as strings. */
function reviveDates(push: unknown): TransactionRow | null {
  if (!push) return null;
  const row = push as Record<string, unknown>;
  for (const key of ['transacted_at', 'confirmed_at', 'posted_at', 'failed_at'])
    if (typeof row[key] === 'string') row[key] = new Date(row[key]);
  return row as unknown as TransactionRow;
}

/** One event of the account with its allocation records (undefined: not this account's). */
export async function findAccountEvent(
  db: Knex,
  organizationId: string,
  accountId: string,
  eventId: string,
): Promise<(EventRow & { allocations: AllocationRow[] }) | undefined> {
  const event: EventRow | undefined = await db('loan_transactions as e')
    .leftJoin('transactions as t', 't.id', 'e.transaction_id')
    .where({ 'e.organization_id': organizationId, 'e.account_id': accountId, 'e.id': eventId })
    .first(eventColumns(db));
  if (!event) return undefined;
  const allocations: AllocationRow[] = await db('installment_allocations')
    .where({ organization_id: organizationId, event_id: event.id })
    .orderBy([{ column: 'loan_id' }, { column: 'position' }]);
  return { ...event, push: reviveDates(event.push), allocations };
}

/** The loans a repayment paid that are still ACTIVE (their runs take a reversal). */
export async function activeLoansPaidBy(db: Knex, organizationId: string, eventId: string): Promise<string[]> {
  const rows: { id: string }[] = await db('loans as l')
    .where({ 'l.organization_id': organizationId, 'l.status': 'ACTIVE' })
    .whereExists((q) =>
      q.select(1).from('installment_allocations as a').where('a.event_id', eventId).whereRaw('a.loan_id = l.id'),
    )
    .orderBy('l.created_at')
    .select('l.id');
  return rows.map((r) => r.id);
}

/** A loan on the account (a term loan or a revolving cycle), undefined when it is not the account's. */
export function findAccountLoan(
  db: Knex,
  organizationId: string,
  accountId: string,
  loanId: string,
): Promise<{ id: string; status: string; currency: string } | undefined> {
  return db('loans')
    .where({ organization_id: organizationId, account_id: accountId, id: loanId })
    .first('id', 'status', 'currency');
}

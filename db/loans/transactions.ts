import type { Knex } from 'knex';
import { preparedRows } from '../prepared';

/**
 * The installment transaction lists (spec 4.3), read from their read model (migration
 * 20261208100000_installment_transaction_views): each item as the API answers it, written with
 * its event. Pages are keyset queries on the events' `seq` (newest first), never OFFSET: `after`
 * reads older events than the cursor, `before` newer ones; a page costs the same wherever it sits
 * in a long history.
 */

/** A list item: its event's seq (the cursor) and its JSON, as written. */
export interface Item {
  seq: string;
  view: string;
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
 * One keyset page of `table`'s items of one account or installment (`key`), by seq, newest first,
 * with both neighbours known, in one statement: the page (one index range, `size + 1` rows: the
 * extra one tells whether the far side goes on), and a probe one row past its near end. Round
 * trips, not rows, are what a page costs here: a socket write is the largest share of a
 * request's CPU (see README, Benchmarks).
 */
async function keysetPage(
  db: Knex,
  table: 'loan_transaction_views' | 'installment_allocation_views',
  key: { organization_id: string } & ({ account_id: string } | { installment_id: string }),
  page: PageQuery,
  gate: Gate,
): Promise<Page<Item> | Refused> {
  const base = () => db(table).where(key);
  const towardsNewer = page.before !== undefined;
  const q = base();
  if (page.after !== undefined) q.where('seq', '<', page.after.toString());
  if (page.before !== undefined) q.where('seq', '>', page.before.toString());
  // The near neighbour: the first row past the page's near end, walked from there in the index
  // (ordered with a limit: as a bare EXISTS the planner, not knowing the bound, may scan the table).
  const near = towardsNewer ? '<' : '>';
  const probe = base()
    .whereRaw(`seq ${near} (select ${towardsNewer ? 'min' : 'max'}(seq) from page)`)
    .orderBy('seq', towardsNewer ? 'desc' : 'asc')
    .limit(1)
    .select(db.raw('1'));
  // Prepared: planning this statement costs about as much as running it, and its plan (an index
  // range on the account's or installment's seq) does not hang on the values.
  // The gate's one row, joined to the page only when it refuses nothing: a refused read is one
  // row of nulls, an empty page one row with no seq. The items stay text: passed on, not parsed.
  const fetched = await preparedRows<{
    seq: string | null;
    view: string | null;
    near: boolean;
    refused: string | null;
  }>(
    db,
    db
      .with(
        'page',
        q
          .orderBy('seq', towardsNewer ? 'asc' : 'desc')
          .limit(page.size + 1)
          .select('seq', db.raw('view::text as view')),
      )
      .from(db.raw(`(select ${gate.sql} as refused) as g`, gate.bindings))
      .leftJoin('page', function () {
        this.on(db.raw('g.refused is null'));
      })
      .select('g.refused', 'page.seq', 'page.view', db.raw('(?) is not null as near', [probe]))
      .orderBy('page.seq', towardsNewer ? 'asc' : 'desc'),
  );
  const refused = fetched[0]?.refused;
  if (refused) return { refused };
  const found = fetched.filter((row): row is typeof row & Item => row.seq !== null);
  const more = found.length > page.size;
  const nearExists = found[0]?.near ?? false;
  const rows: Item[] = found.slice(0, page.size).map(({ seq, view }) => ({ seq, view }));
  if (towardsNewer) rows.reverse();
  if (rows.length === 0) return { rows, older: false, newer: false };
  return towardsNewer ? { rows, older: nearExists, newer: more } : { rows, older: more, newer: nearExists };
}

/** A page of an account's events, each `{transaction, installments}`. */
export function accountEventsPage(
  db: Knex,
  organizationId: string,
  accountId: string,
  page: PageQuery,
  gate: Gate,
): Promise<Page<Item> | Refused> {
  return keysetPage(
    db,
    'loan_transaction_views',
    { organization_id: organizationId, account_id: accountId },
    page,
    gate,
  );
}

/** A page of one installment's allocation records, each `{transaction, allocation}`. */
export function installmentAllocationsPage(
  db: Knex,
  organizationId: string,
  installmentId: string,
  page: PageQuery,
  gate: Gate,
): Promise<Page<Item> | Refused> {
  return keysetPage(
    db,
    'installment_allocation_views',
    { organization_id: organizationId, installment_id: installmentId },
    page,
    gate,
  );
}

/** One event of the account: its kind, whether it allocated anything, and its list item. */
export interface EventItem {
  id: string;
  kind: 'REPAYMENT' | 'REVERSAL' | 'WAIVER';
  allocated: boolean;
  /** `{transaction, installments}`, as the account list shows it. */
  view: string;
}

/** One event of the account (undefined: not this account's). */
export function findAccountEvent(
  db: Knex,
  organizationId: string,
  accountId: string,
  eventId: string,
): Promise<EventItem | undefined> {
  return db('loan_transactions as e')
    .join('loan_transaction_views as v', 'v.event_id', 'e.id')
    .where({ 'e.organization_id': organizationId, 'e.account_id': accountId, 'e.id': eventId })
    .first(
      'e.id',
      'e.kind',
      db.raw('v.view::text as view'),
      // From the item itself: its installments are the event's allocation records.
      db.raw(`json_array_length(v.view -> 'installments') > 0 as allocated`),
    );
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

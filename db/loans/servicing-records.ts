import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { TransactionFields } from '../../domain/mobile-money/views';
import { allocationView, eventTransaction } from '../../domain/loans/views';
import type { Allocation, Obligation } from '../../domain/loans/allocation';
import { allocationEffect, cyclesOldestFirst } from '../../domain/loans/servicing';
import { InstallmentStatus, LoanStatus } from '../../domain/loans/terms';
import { type Leg, ledgerAccounts } from '../ledger/ledger';
import { preparedRows } from '../prepared';
import type { InstallmentRow } from './loans';

/**
 * What every servicing step of servicing.ts writes and reads back, in its database transaction:
 * what the account still owes, the event with its allocation records applied to the
 * installments, the receivable legs of its journal entry, and what an event did (the answer to a
 * step run twice).
 */

export type ServicingOutcome =
  /** `loanIds`: the loans the event touched; `repaid`: those of them that owe nothing now (to be closed). */
  | { outcome: 'applied'; eventId: string; loanIds: string[]; repaid: string[] }
  | { outcome: 'refused'; reason: string; detail: string };

type OpenInstallment = Pick<
  InstallmentRow,
  | 'id'
  | 'loan_id'
  | 'position'
  | 'due_date'
  | 'principal'
  | 'interest'
  | 'penalties'
  | 'principal_paid'
  | 'interest_paid'
  | 'penalties_paid'
> & { loan_created_at: Date };

/** What the account's ACTIVE loans still owe, installment by installment (optionally one loan's). */
export async function openObligations(
  trx: Knex.Transaction,
  organizationId: string,
  accountId: string,
  loanId?: string,
): Promise<Obligation[]> {
  const rows: OpenInstallment[] = await trx('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .where({ 'i.organization_id': organizationId, 'i.account_id': accountId, 'l.status': LoanStatus.ACTIVE })
    .modify((q) => {
      if (loanId) q.where('l.id', loanId);
    })
    .whereNot('i.status', InstallmentStatus.PAID)
    .select(
      'i.id',
      'i.loan_id',
      'i.position',
      'i.due_date',
      'i.principal',
      'i.interest',
      'i.penalties',
      'i.principal_paid',
      'i.interest_paid',
      'i.penalties_paid',
      'l.created_at as loan_created_at',
    );
  const cycles = cyclesOldestFirst(rows.map((r) => ({ loanId: r.loan_id, loanCreatedAt: r.loan_created_at })));
  return rows.map((row) => ({
    installmentId: row.id,
    loanId: row.loan_id,
    position: row.position,
    dueDate: row.due_date,
    cycleOrder: cycles.indexOf(row.loan_id),
    penalties: Number(row.penalties) - Number(row.penalties_paid),
    interest: Number(row.interest) - Number(row.interest_paid),
    principal: Number(row.principal) - Number(row.principal_paid),
  }));
}

/** The receivable legs an allocation credits (sign -1: a payment) or debits again (+1: a reversal). */
export function receivableLegs(
  allocations: Pick<Allocation, 'loanId' | 'principal' | 'interest' | 'arrears'>[],
  sign: 1 | -1,
) {
  const totals = new Map<string, number>();
  const add = (account: string, amount: number) => totals.set(account, (totals.get(account) ?? 0) + amount);
  for (const a of allocations) {
    add(ledgerAccounts.loanReceivable(a.loanId), a.principal);
    add(ledgerAccounts.interestReceivable(a.loanId), a.interest);
    add(ledgerAccounts.penaltyReceivable(a.loanId), a.arrears);
  }
  return [...totals]
    .filter(([, amount]) => amount !== 0)
    .map(([account, amount]): Leg => ({ account, amount: sign * amount }));
}

/** A transaction event as its step writes it (loan_transactions columns; the organization and creation time added). */
export interface NewEvent {
  id: string;
  resource_id: string;
  account_id: string;
  kind: 'REPAYMENT' | 'REVERSAL' | 'WAIVER';
  amount: number;
  allocated_amount: number;
  currency: string;
  effective_at: Date;
  reverses_id?: string;
  loan_id?: string | null;
  reason?: string;
  [column: string]: unknown;
}

/**
 * Writes a transaction event and its allocation records, and applies them to the installments
 * (paid amounts added, or, negative, taken back; each one's status follows): what every
 * servicing step records, in its database transaction. With them it writes the installment
 * transaction lists' items (migration 20261208100000_installment_transaction_views): the event's
 * and each record's, rendered once here, so a page reads them and nothing else. `push`: a
 * repayment's (its Transaction resource is the push's). One statement, one round trip however
 * many installments it touches (an event allocates to each installment at most once).
 */
export async function record(
  trx: Knex.Transaction,
  organizationId: string,
  event: NewEvent,
  push: TransactionFields | null,
  allocations: Allocation[],
  source: 'LIVE' | 'REVERSAL' | 'WAIVER',
  now: Date,
): Promise<void> {
  const records = allocations
    .map((a) => ({
      id: randomUUID(),
      installment_id: a.installmentId,
      loan_id: a.loanId,
      position: a.position,
      allocated_amount: a.allocated,
      principal_amount: a.principal,
      interest_amount: a.interest,
      arrears_amount: a.arrears,
      effect: allocationEffect(source, a.settles),
      source,
      allocated_at: now,
    }))
    // The order the lists show an event's records in.
    .sort((x, y) => (x.loan_id < y.loan_id ? -1 : x.loan_id > y.loan_id ? 1 : x.position - y.position));
  const transaction = JSON.stringify(
    eventTransaction({
      id: event.id,
      resource_id: event.resource_id,
      account_id: event.account_id,
      kind: event.kind,
      reverses_id: event.reverses_id ?? null,
      loan_id: event.loan_id ?? null,
      amount: event.amount,
      currency: event.currency,
      reason: event.reason ?? null,
      created_at: now,
      push,
    }),
  );
  const shown = records.map((r) => JSON.stringify(allocationView(r)));
  const statement = trx
    .with(
      'event',
      trx('loan_transactions')
        .insert({ ...event, organization_id: organizationId, created_at: now })
        .returning(['seq']),
    )
    .with(
      'item',
      trx.raw(
        `insert into loan_transaction_views (event_id, organization_id, account_id, seq, view)
         select ?, ?, ?, event.seq, ?::json from event`,
        [
          event.id,
          organizationId,
          event.account_id,
          `{"transaction":${transaction},"installments":[${shown.join(',')}]}`,
        ],
      ),
    );
  if (records.length > 0) {
    const rows = JSON.stringify(
      records.map((r, i) => ({ ...r, view: `{"transaction":${transaction},"allocation":${shown[i]}}` })),
    );
    statement
      .with(
        'a',
        trx.raw(
          `select * from json_to_recordset(?::json) as a(id uuid, installment_id uuid, loan_id uuid, position int,
             allocated_amount bigint, principal_amount bigint, interest_amount bigint, arrears_amount bigint,
             effect text, view text)`,
          [rows],
        ),
      )
      .with(
        'allocations',
        trx.raw(
          `insert into installment_allocations (id, organization_id, event_id, seq, installment_id, loan_id, account_id,
             position, allocated_amount, principal_amount, interest_amount, arrears_amount, effect, source,
             effective_at, allocated_at)
           select a.id, ?, ?, event.seq, a.installment_id, a.loan_id, ?, a.position, a.allocated_amount,
                  a.principal_amount, a.interest_amount, a.arrears_amount, a.effect, ?, ?, ?
             from event, a`,
          [organizationId, event.id, event.account_id, source, event.effective_at, now],
        ),
      )
      .with(
        'items',
        trx.raw(
          `insert into installment_allocation_views (allocation_id, organization_id, installment_id, seq, view)
           select a.id, ?, a.installment_id, event.seq, a.view::json from event, a`,
          [organizationId],
        ),
      )
      .with(
        'settled',
        trx.raw(
          `update installments i set
             principal_paid = i.principal_paid + a.principal_amount, interest_paid = i.interest_paid + a.interest_amount,
             penalties_paid = i.penalties_paid + a.arrears_amount,
             status = case when i.principal_paid + a.principal_amount = i.principal
                            and i.interest_paid + a.interest_amount = i.interest
                            and i.penalties_paid + a.arrears_amount = i.penalties
                           then 'PAID' else i.schedule_status end,
             updated_at = ?
            from a
           where i.id = a.installment_id`,
          [now],
        ),
      );
  }
  // Prepared: knex sent it unnamed, parsed and planned on every servicing step (about 0.4 ms
  // to parse alone); its plan does not hang on the values.
  await preparedRows(trx, statement.select('seq').from('event'));
}

/** What an event did: the loans it touched, and those of them with nothing left to pay. */
export async function outcomeOf(trx: Knex | Knex.Transaction, eventId: string): Promise<ServicingOutcome> {
  const rows: { loan_id: string; open: boolean }[] = await trx('installment_allocations as a')
    .where({ 'a.event_id': eventId })
    .groupBy('a.loan_id')
    .select(
      'a.loan_id',
      trx.raw(`exists (select 1 from installments i where i.loan_id = a.loan_id and i.status <> 'PAID') as open`),
    );
  return {
    outcome: 'applied',
    eventId,
    loanIds: rows.map((r) => r.loan_id),
    repaid: rows.filter((r) => !r.open).map((r) => r.loan_id),
  };
}

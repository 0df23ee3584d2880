import type { Knex } from 'knex';
import type { Allocation, Obligation } from '../../domain/loans/allocation';
import { allocationEffect, cyclesOldestFirst } from '../../domain/loans/servicing';
import { InstallmentStatus, LoanStatus } from '../../domain/loans/terms';
import { type Leg, ledgerAccounts } from '../ledger/ledger';
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
      trx.raw(`to_char(i.due_date, 'YYYY-MM-DD') as due_date`),
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
  [column: string]: unknown;
}

/**
 * Writes a transaction event and its allocation records, and applies them to the installments
 * (paid amounts added, or, negative, taken back; each one's status follows): what every
 * servicing step records, in its database transaction. One statement, one round trip however
 * many installments it touches (an event allocates to each installment at most once).
 */
export async function record(
  trx: Knex.Transaction,
  organizationId: string,
  event: NewEvent,
  allocations: Allocation[],
  source: 'LIVE' | 'REVERSAL' | 'WAIVER',
  now: Date,
): Promise<void> {
  const inserted = trx('loan_transactions')
    .insert({ ...event, organization_id: organizationId, created_at: now })
    .returning(['seq']);
  if (allocations.length === 0) {
    await inserted;
    return;
  }
  const rows = JSON.stringify(
    allocations.map((a) => ({
      installment_id: a.installmentId,
      loan_id: a.loanId,
      position: a.position,
      allocated: a.allocated,
      principal: a.principal,
      interest: a.interest,
      arrears: a.arrears,
      effect: allocationEffect(source, a.settles),
    })),
  );
  await trx
    .with('event', inserted)
    .with(
      'a',
      trx.raw(
        `select * from jsonb_to_recordset(?::jsonb) as a(installment_id uuid, loan_id uuid, position int,
           allocated bigint, principal bigint, interest bigint, arrears bigint, effect text)`,
        [rows],
      ),
    )
    .with(
      'allocations',
      trx.raw(
        `insert into installment_allocations (organization_id, event_id, seq, installment_id, loan_id, account_id,
           position, allocated_amount, principal_amount, interest_amount, arrears_amount, effect, source,
           effective_at, allocated_at)
         select ?, ?, event.seq, a.installment_id, a.loan_id, ?, a.position, a.allocated, a.principal, a.interest,
                a.arrears, a.effect, ?, ?, ?
           from event, a`,
        [organizationId, event.id, event.account_id, source, event.effective_at, now],
      ),
    )
    .with(
      'settled',
      trx.raw(
        `update installments i set
           principal_paid = i.principal_paid + a.principal, interest_paid = i.interest_paid + a.interest,
           penalties_paid = i.penalties_paid + a.arrears,
           status = case when i.principal_paid + a.principal = i.principal and i.interest_paid + a.interest = i.interest
                          and i.penalties_paid + a.arrears = i.penalties
                         then 'PAID' else i.schedule_status end,
           updated_at = ?
          from a
         where i.id = a.installment_id`,
        [now],
      ),
    )
    .select('seq')
    .from('event');
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

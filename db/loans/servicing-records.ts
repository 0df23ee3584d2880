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

/** Adds (or, negative, takes back) paid amounts on an installment; its status follows. */
async function settle(
  trx: Knex.Transaction,
  installmentId: string,
  paid: { principal: number; interest: number; arrears: number },
  now: Date,
): Promise<void> {
  await trx.raw(
    `update installments set
       principal_paid = principal_paid + ?, interest_paid = interest_paid + ?, penalties_paid = penalties_paid + ?,
       status = case when principal_paid + ? = principal and interest_paid + ? = interest and penalties_paid + ? = penalties
                     then 'PAID' else schedule_status end,
       updated_at = ?
     where id = ?`,
    [paid.principal, paid.interest, paid.arrears, paid.principal, paid.interest, paid.arrears, now, installmentId],
  );
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
 * Writes a transaction event and its allocation records, and applies them to the installments:
 * what every servicing step records, in its database transaction.
 */
export async function record(
  trx: Knex.Transaction,
  organizationId: string,
  event: NewEvent,
  allocations: Allocation[],
  source: 'LIVE' | 'REVERSAL' | 'WAIVER',
  now: Date,
): Promise<void> {
  const [inserted] = (await trx('loan_transactions')
    .insert({ ...event, organization_id: organizationId, created_at: now })
    .returning(['seq'])) as [{ seq: string }];
  if (allocations.length === 0) return;
  await trx('installment_allocations').insert(
    allocations.map((a) => ({
      organization_id: organizationId,
      event_id: event.id,
      seq: inserted.seq,
      installment_id: a.installmentId,
      loan_id: a.loanId,
      account_id: event.account_id,
      position: a.position,
      allocated_amount: a.allocated,
      principal_amount: a.principal,
      interest_amount: a.interest,
      arrears_amount: a.arrears,
      effect: allocationEffect(source, a.settles),
      source,
      effective_at: event.effective_at,
      allocated_at: now,
    })),
  );
  for (const a of allocations)
    await settle(trx, a.installmentId, { principal: a.principal, interest: a.interest, arrears: a.arrears }, now);
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

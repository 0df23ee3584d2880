import type { Knex } from 'knex';
import {
  allocate,
  type Allocation,
  type Obligation,
  penaltyAmount,
  type PenaltyTerms,
} from '../../domain/loans/allocation';
import { InstallmentStatus, LoanStatus } from '../../domain/loans/terms';
import { lockAccount } from '../accounts/accounts';
import { type Leg, ledgerAccounts, postJournal } from '../ledger/ledger';
import type { InstallmentRow } from './loans';

/**
 * Servicing a lending account (migration 20261124100000_loan_servicing): repayments allocated
 * to installments, reversals, waivers and penalty charges. Each is one database transaction
 * under the account's lock (one servicing step per account at a time), writes its event and
 * allocation records once (unique keys: a repayment per push, a reversal per repayment, a
 * charge per loan and period) and one balanced journal entry; run twice, it answers what the
 * first run did and moves nothing again.
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
async function openObligations(
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
  const cycles = [...new Set(rows.map((r) => r.loan_id))].sort((a, b) => {
    const at = (id: string) => rows.find((r) => r.loan_id === id)!.loan_created_at.getTime();
    return at(a) - at(b) || (a < b ? -1 : 1);
  });
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
function receivableLegs(
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
interface NewEvent {
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
async function record(
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
      effect:
        source === 'REVERSAL'
          ? 'REVERSED'
          : source === 'WAIVER'
            ? 'WAIVED'
            : a.settles
              ? 'OBLIGATION_SETTLED'
              : 'PARTIALLY_SETTLED',
      source,
      effective_at: event.effective_at,
      allocated_at: now,
    })),
  );
  for (const a of allocations)
    await settle(trx, a.installmentId, { principal: a.principal, interest: a.interest, arrears: a.arrears }, now);
}

/** What an event did: the loans it touched, and those of them with nothing left to pay. */
async function outcomeOf(trx: Knex | Knex.Transaction, eventId: string): Promise<ServicingOutcome> {
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

/**
 * Applies a POSTED push on a credit account to what the account owes, by the allocation
 * strategy: one event (its id the push's), its allocation records, the installments paid, one
 * REPAYMENT entry (the credit account pays the loans' receivables). An overpayment (the push
 * route refuses more than is owed, so only pushes racing each other make one) stays on the credit
 * account as the payer's money, recorded on the event for an operator to refund; it never reaches
 * the current account, whose deposits must come from the owner's number.
 */
export async function applyRepayment(
  db: Knex,
  organizationId: string,
  input: { transactionId: string; loanId: string | null },
  now: Date,
): Promise<ServicingOutcome> {
  return db.transaction(async (trx) => {
    const push:
      | {
          id: string;
          resource_id: string;
          account_id: string;
          amount: string;
          currency: string;
          status: string;
          posted_at: Date | null;
        }
      | undefined = await trx('transactions as t')
      .join('accounts as a', 'a.id', 't.account_id')
      .where({
        't.organization_id': organizationId,
        't.id': input.transactionId,
        'a.type': 'CREDIT',
        't.type': 'STK_PUSH',
      })
      // The account's lock with the read: one servicing step per account at a time.
      .forUpdate('a')
      .first('t.id', 't.resource_id', 't.account_id', 't.amount', 't.currency', 't.status', 't.posted_at');
    if (!push || push.status !== 'POSTED')
      return { outcome: 'refused', reason: 'NOT_A_REPAYMENT', detail: 'not a posted push on a credit account' };
    const done = await trx('loan_transactions').where({ transaction_id: push.id }).first('id');
    if (done) return outcomeOf(trx, push.id);

    const amount = Number(push.amount);
    const obligations = await openObligations(trx, organizationId, push.account_id);
    const result = allocate(amount, obligations);
    await record(
      trx,
      organizationId,
      {
        id: push.id,
        resource_id: push.resource_id,
        account_id: push.account_id,
        kind: 'REPAYMENT',
        transaction_id: push.id,
        loan_id: input.loanId,
        amount,
        allocated_amount: result.allocated,
        overpaid_amount: result.overpayment,
        currency: push.currency,
        effective_at: push.posted_at ?? now,
      },
      result.allocations,
      'LIVE',
      now,
    );
    if (result.allocated > 0)
      await postJournal(trx, {
        transactionId: push.id,
        kind: 'REPAYMENT',
        currency: push.currency,
        legs: [
          { account: ledgerAccounts.customer(push.account_id), amount: result.allocated },
          ...receivableLegs(result.allocations, -1),
        ],
      });
    // A loan is repaid when every installment it had open is settled now.
    const loanIds = [...new Set(result.allocations.map((a) => a.loanId))];
    const settled = new Set(result.allocations.filter((a) => a.settles).map((a) => a.installmentId));
    const repaid = loanIds.filter((loanId) =>
      obligations.every((o) => o.loanId !== loanId || settled.has(o.installmentId) || isNothingOwed(o)),
    );
    return { outcome: 'applied', eventId: push.id, loanIds, repaid };
  });
}

const isNothingOwed = (o: Obligation) => o.penalties + o.interest + o.principal === 0;

/**
 * Reverses a repayment's allocations (an operator's correction: the payment was misapplied or
 * returned to the payer): a REVERSAL event whose records offset the original ones, the
 * installments owing again, and a REVERSAL entry that restores the receivables against the
 * money owed back to the payer. Refused when a loan it paid is no longer ACTIVE.
 */
export async function reverseRepayment(
  db: Knex,
  organizationId: string,
  input: { reversalId: string; resourceId: string; repaymentId: string; reason: string; by: string },
  now: Date,
): Promise<ServicingOutcome> {
  return db.transaction(async (trx) => {
    const repayment: { id: string; account_id: string; currency: string; kind: string } | undefined = await trx(
      'loan_transactions',
    )
      .where({ organization_id: organizationId, id: input.repaymentId })
      .first('id', 'account_id', 'currency', 'kind');
    if (!repayment || repayment.kind !== 'REPAYMENT')
      return { outcome: 'refused', reason: 'NOT_FOUND', detail: 'No such repayment' };
    await lockAccount(trx, repayment.account_id);
    const earlier: { id: string } | undefined = await trx('loan_transactions')
      .where({ reverses_id: repayment.id })
      .first('id');
    if (earlier) return outcomeOf(trx, earlier.id);
    const original: {
      installment_id: string;
      loan_id: string;
      position: number;
      principal_amount: string;
      interest_amount: string;
      arrears_amount: string;
    }[] = await trx('installment_allocations').where({ event_id: repayment.id });
    if (original.length === 0)
      return { outcome: 'refused', reason: 'NOTHING_ALLOCATED', detail: 'The repayment paid no installment' };
    const loanIds = [...new Set(original.map((a) => a.loan_id))];
    const closed = await trx('loans').whereIn('id', loanIds).whereNot({ status: LoanStatus.ACTIVE }).first('id');
    if (closed) return { outcome: 'refused', reason: 'LOAN_CLOSED', detail: 'A loan the repayment paid is closed' };
    const offsets: Allocation[] = original.map((a) => {
      const principal = -Number(a.principal_amount);
      const interest = -Number(a.interest_amount);
      const arrears = -Number(a.arrears_amount);
      return {
        installmentId: a.installment_id,
        loanId: a.loan_id,
        position: a.position,
        principal,
        interest,
        arrears,
        allocated: principal + interest + arrears,
        settles: false,
      };
    });
    const total = -offsets.reduce((sum, a) => sum + a.allocated, 0);
    await record(
      trx,
      organizationId,
      {
        id: input.reversalId,
        resource_id: input.resourceId,
        account_id: repayment.account_id,
        kind: 'REVERSAL',
        reverses_id: repayment.id,
        amount: total,
        allocated_amount: total,
        currency: repayment.currency,
        reason: input.reason,
        created_by: input.by,
        effective_at: now,
      },
      offsets,
      'REVERSAL',
      now,
    );
    await postJournal(trx, {
      transactionId: input.reversalId,
      kind: 'REVERSAL',
      currency: repayment.currency,
      legs: [...receivableLegs(offsets, -1), { account: ledgerAccounts.reversalsPayable, amount: -total }],
    });
    // An installment owing again after its due date puts the loan in arrears.
    await trx('loans')
      .whereIn('id', loanIds)
      .whereNull('arrears_at')
      .whereExists((q) =>
        q.select(1).from('installments as i').whereRaw('i.loan_id = loans.id').where('i.status', 'OVERDUE'),
      )
      .update({ arrears_at: now });
    return outcomeOf(trx, input.reversalId);
  });
}

/**
 * Forgives `amount` of a loan's penalties and interest by the allocation strategy (never its
 * principal: that would be a write-off): a WAIVER event with WAIVED records and a WAIVER entry
 * charging the forgiven receivables to the waivers expense. Refused above what is waivable.
 */
export async function waive(
  db: Knex,
  organizationId: string,
  input: { waiverId: string; resourceId: string; loanId: string; amount: number; reason: string; by: string },
  now: Date,
): Promise<ServicingOutcome> {
  return db.transaction(async (trx) => {
    const loan: { id: string; account_id: string; currency: string; status: string } | undefined = await trx('loans')
      .where({ organization_id: organizationId, id: input.loanId })
      .first('id', 'account_id', 'currency', 'status');
    if (!loan) return { outcome: 'refused', reason: 'NOT_FOUND', detail: 'No such loan' };
    await lockAccount(trx, loan.account_id);
    const earlier = await trx('loan_transactions')
      .where({ organization_id: organizationId, id: input.waiverId })
      .first('id');
    if (earlier) return outcomeOf(trx, input.waiverId);
    if (loan.status !== LoanStatus.ACTIVE)
      return { outcome: 'refused', reason: 'LOAN_CLOSED', detail: 'The loan is closed' };
    const obligations = await openObligations(trx, organizationId, loan.account_id, loan.id);
    const result = allocate(input.amount, obligations, ['penalties', 'interest']);
    if (result.overpayment > 0)
      return {
        outcome: 'refused',
        reason: 'OVER_WAIVABLE',
        detail: `At most ${result.allocated} of penalties and interest is outstanding on the loan`,
      };
    await record(
      trx,
      organizationId,
      {
        id: input.waiverId,
        resource_id: input.resourceId,
        account_id: loan.account_id,
        kind: 'WAIVER',
        loan_id: loan.id,
        amount: input.amount,
        allocated_amount: input.amount,
        currency: loan.currency,
        reason: input.reason,
        created_by: input.by,
        effective_at: now,
      },
      result.allocations,
      'WAIVER',
      now,
    );
    await postJournal(trx, {
      transactionId: input.waiverId,
      kind: 'WAIVER',
      currency: loan.currency,
      legs: [
        { account: ledgerAccounts.waiversExpense, amount: input.amount },
        ...receivableLegs(result.allocations, -1),
      ],
    });
    return outcomeOf(trx, input.waiverId);
  });
}

/** A loan's penalty terms, as its offer copied them from the product. */
export async function penaltyTermsOf(
  db: Knex | Knex.Transaction,
  organizationId: string,
  loanId: string,
): Promise<PenaltyTerms | undefined> {
  const row: { terms: { penalty: PenaltyTerms } } | undefined = await db('loans as l')
    .join('loan_applications as a', 'a.id', 'l.application_id')
    .where({ 'l.organization_id': organizationId, 'l.id': loanId })
    .first('a.terms');
  return row?.terms.penalty;
}

/**
 * Charges a loan's penalty for one period, once (unique per loan and period): rate_basis_points
 * of what was outstanding at `dueAt` (principal plus arrears: the principal and interest not
 * paid by then; penalties do not compound), added to the last installment and posted as a
 * PENALTY entry. Nothing for a loan no longer ACTIVE. Answers the amount charged.
 */
export async function chargePenalty(
  db: Knex,
  organizationId: string,
  input: { chargeId: string; loanId: string; period: number; dueAt: Date },
  now: Date,
): Promise<{ charged: number } | { closed: true }> {
  return db.transaction(async (trx) => {
    const loan: { id: string; account_id: string; currency: string; status: string } | undefined = await trx('loans')
      .where({ organization_id: organizationId, id: input.loanId })
      .first('id', 'account_id', 'currency', 'status');
    if (!loan) throw new Error(`no loan ${input.loanId}`);
    await lockAccount(trx, loan.account_id);
    const earlier: { amount: string } | undefined = await trx('loan_penalty_charges')
      .where({ loan_id: loan.id, period: input.period })
      .first('amount');
    if (earlier) return { charged: Number(earlier.amount) };
    if (loan.status !== LoanStatus.ACTIVE) return { closed: true };
    const terms = await penaltyTermsOf(trx, organizationId, loan.id);
    const { rows } = await trx.raw<{ rows: { basis: string; last: string }[] }>(
      `select (select sum(i.principal + i.interest) from installments i where i.loan_id = :loan)
              - coalesce((select sum(a.principal_amount + a.interest_amount) from installment_allocations a
                           where a.loan_id = :loan and a.effective_at < :at), 0) as basis,
              (select i.id from installments i where i.loan_id = :loan order by i.position desc limit 1) as last`,
      { loan: loan.id, at: input.dueAt },
    );
    const basis = Math.max(0, Number(rows[0]!.basis));
    const amount = penaltyAmount(basis, terms?.rateBasisPoints ?? 0);
    await trx('loan_penalty_charges').insert({
      id: input.chargeId,
      organization_id: organizationId,
      loan_id: loan.id,
      installment_id: rows[0]!.last,
      period: input.period,
      due_at: input.dueAt,
      basis,
      rate_basis_points: terms?.rateBasisPoints ?? 0,
      amount,
      charged_at: now,
    });
    if (amount > 0) {
      await trx('installments')
        .where({ id: rows[0]!.last })
        .update({ penalties: trx.raw('penalties + ?', [amount]), status: trx.raw('schedule_status'), updated_at: now });
      await postJournal(trx, {
        transactionId: input.chargeId,
        kind: 'PENALTY',
        currency: loan.currency,
        legs: [
          { account: ledgerAccounts.penaltyReceivable(loan.id), amount },
          { account: ledgerAccounts.penaltyIncome, amount: -amount },
        ],
      });
    }
    return { charged: amount };
  });
}

/** What a lending account's ACTIVE loans still owe in all (principal, interest, penalties). */
export async function accountOutstanding(db: Knex, organizationId: string, accountId: string): Promise<number> {
  const row: { owed: string | null } | undefined = await db('installments as i')
    .join('loans as l', 'l.id', 'i.loan_id')
    .where({ 'i.organization_id': organizationId, 'i.account_id': accountId, 'l.status': LoanStatus.ACTIVE })
    .first(
      db.raw(
        'sum(i.principal + i.interest + i.penalties - i.principal_paid - i.interest_paid - i.penalties_paid) as owed',
      ),
    );
  return Number(row?.owed ?? 0);
}

/** The ACTIVE loan whose workflow takes a repayment on this account: the oldest open cycle. */
export async function repaymentTarget(db: Knex, organizationId: string, transactionId: string): Promise<string | null> {
  const row: { id: string } | undefined = await db('transactions as t')
    .join('loans as l', 'l.account_id', 't.account_id')
    .where({ 't.organization_id': organizationId, 't.id': transactionId, 'l.status': LoanStatus.ACTIVE })
    .orderBy([{ column: 'l.created_at' }, { column: 'l.id' }])
    .first('l.id');
  return row?.id ?? null;
}

/**
 * Pushes posted on a credit account between `from` and `to` that were never allocated, oldest
 * first: the repayment reconciliation's work (a platform job across organizations, like the
 * callback purge; each push carries its organization).
 */
export async function unallocatedRepayments(
  db: Knex,
  window: { from: Date; to: Date },
  limit: number,
): Promise<{ organizationId: string; transactionId: string; postedAtMs: number }[]> {
  const rows: { organization_id: string; id: string; posted_at: Date }[] = await db('transactions as t')
    .join('accounts as a', 'a.id', 't.account_id')
    .where({ 't.type': 'STK_PUSH', 't.status': 'POSTED', 'a.type': 'CREDIT' })
    .where('t.posted_at', '>=', window.from)
    .where('t.posted_at', '<', window.to)
    .whereNotExists((q) => q.select(1).from('loan_transactions as e').whereRaw('e.transaction_id = t.id'))
    .orderBy('t.posted_at')
    .limit(limit)
    .select('t.organization_id', 't.id', 't.posted_at');
  return rows.map((r) => ({
    organizationId: r.organization_id,
    transactionId: r.id,
    postedAtMs: r.posted_at.getTime(),
  }));
}

/** Whether every disbursed loan's ledger balance equals its schedule's outstanding total (the view's check). */
export async function inconsistentLoans(
  db: Knex,
): Promise<{ loan_id: string; ledger_outstanding: string; schedule_outstanding: string }[]> {
  return db('loan_ledger_consistency')
    .whereRaw('ledger_outstanding <> schedule_outstanding')
    .select('loan_id', 'ledger_outstanding', 'schedule_outstanding');
}

import { type OfferTerms, type PeriodUnit, weeklyBasisPoints } from './terms';
import { type TransactionFields, transactionView } from '../mobile-money/views';

/**
 * The loan application resource (spec 2) in the field sets the spec lists (organization offer,
 * partner-a offer, applied), from its row or a webhook event's snapshot of one; the schemas, for
 * the OpenAPI document, are in api/loans/views.ts.
 */
export interface LoanApplicationFields {
  id: string;
  resource_id: string;
  status: string;
  account_id: string;
  loan_amount: string | number;
  tenure_duration: number;
  tenure_unit: PeriodUnit;
  terms: OfferTerms;
  currency: string;
  expires_at: Date;
  collateral_amount: string | number | null;
  collateral_hold_id: string | null;
  total_repayment_amount: string | number | null;
}
export const LOAN_APPLICATION_DATES = ['expires_at'] as const;

const tenureWeeks = (row: LoanApplicationFields) =>
  row.tenure_unit === 'WEEKS' ? row.tenure_duration : Math.ceil(row.tenure_duration / 7);

function commonView(row: LoanApplicationFields) {
  return {
    id: row.id,
    resource_id: row.resource_id,
    status: row.status,
    account_id: row.account_id,
    loan_product_type: row.terms.productType,
    loan_amount: Number(row.loan_amount),
    tenure: { duration: row.tenure_duration, unit: row.tenure_unit },
    currency: row.currency,
    expires_at: row.expires_at.toISOString(),
  };
}

const termsRange = (row: LoanApplicationFields) => ({
  min_loan_amount: row.terms.minAmount,
  max_loan_amount: Math.min(Number(row.loan_amount), row.terms.maxAmount),
});
const penaltyTerms = (row: LoanApplicationFields) => {
  const p = row.terms.penalty;
  return {
    rate_basis_points: p.rateBasisPoints,
    calculation_basis: p.calculationBasis,
    type: p.type,
    period_days: p.periodDays,
    trigger: p.trigger,
    grace_period_days: p.gracePeriodDays,
  };
};
const rate = (r: LoanApplicationFields['terms']['interest']) => ({
  basis_points: r.basisPoints,
  period_value: r.periodValue,
  period_unit: r.periodUnit,
});

export function organizationOfferView(row: LoanApplicationFields) {
  return {
    ...commonView(row),
    interest_rate: rate(row.terms.interest),
    standard_interest_rate: rate(row.terms.standardInterest),
    terms_range: termsRange(row),
    penalty_terms: { ...penaltyTerms(row), max_charge_days: row.terms.penalty.maxChargeDays },
    ...(row.terms.creditLimit !== undefined && { credit_limit: row.terms.creditLimit }),
  };
}

export function partnerAOfferView(row: LoanApplicationFields) {
  return {
    ...commonView(row),
    tenure_weeks: tenureWeeks(row),
    weekly_interest_rate_basis_points: weeklyBasisPoints(row.terms.interest),
    terms_range: termsRange(row),
    penalty_terms: penaltyTerms(row),
  };
}

export function appliedView(row: LoanApplicationFields) {
  return {
    ...commonView(row),
    tenure_weeks: tenureWeeks(row),
    weekly_interest_rate_basis_points: weeklyBasisPoints(row.terms.interest),
    collateral_amount: Number(row.collateral_amount ?? 0),
    collateral_percentage_basis_points: row.terms.collateralBasisPoints,
    collateral_hold_id: row.collateral_hold_id,
    total_repayment_amount: Number(row.total_repayment_amount ?? 0),
  };
}

/** An installment of a loan's schedule, as the installments list answers it. */
export interface InstallmentFields {
  id: string;
  loan_id: string;
  position: number;
  due_date: string;
  principal: string | number;
  interest: string | number;
  penalties: string | number;
  principal_paid: string | number;
  interest_paid: string | number;
  penalties_paid: string | number;
  currency: string;
  status: string;
}

const components = (principal: number, interest: number, penalties: number) => ({
  principal,
  interest,
  penalties,
  total: principal + interest + penalties,
});

export function installmentView(row: InstallmentFields) {
  const amount = [Number(row.principal), Number(row.interest), Number(row.penalties)] as const;
  const paid = [Number(row.principal_paid), Number(row.interest_paid), Number(row.penalties_paid)] as const;
  return {
    id: row.id,
    loan_id: row.loan_id,
    position: row.position,
    due_date: row.due_date,
    amount: components(...amount),
    paid: components(...paid),
    outstanding: components(amount[0] - paid[0], amount[1] - paid[1], amount[2] - paid[2]),
    currency: row.currency,
    status: row.status,
  };
}

/**
 * A loan (no API route shows a loan by itself: its application and its installments do), as
 * loan.repaid carries it: its ids, its amounts (minor units) and when it was disbursed and closed.
 */
export interface LoanFields {
  id: string;
  application_id: string;
  account_id: string;
  status: string;
  principal: string | number;
  interest: string | number;
  currency: string;
  disbursed_at: Date | null;
  closed_at: Date | null;
}
export const LOAN_DATES = ['disbursed_at', 'closed_at'] as const;

export function loanView(row: LoanFields) {
  return {
    id: row.id,
    application_id: row.application_id,
    account_id: row.account_id,
    status: row.status,
    principal: Number(row.principal),
    interest: Number(row.interest),
    currency: row.currency,
    disbursed_at: row.disbursed_at ? row.disbursed_at.toISOString() : null,
    closed_at: row.closed_at ? row.closed_at.toISOString() : null,
  };
}

/** What an installment transaction list's items are drawn from: a transaction event and its push. */
export interface LoanEventFields {
  id: string;
  resource_id: string;
  account_id: string;
  kind: 'REPAYMENT' | 'REVERSAL' | 'WAIVER';
  reverses_id: string | null;
  loan_id: string | null;
  amount: string | number;
  currency: string;
  reason: string | null;
  created_at: Date;
  /** The push, for a repayment. */
  push: TransactionFields | null;
}

/** An allocation record, as the lists show it. */
export interface AllocationFields {
  id: string;
  installment_id: string;
  loan_id: string;
  position: number;
  allocated_amount: string | number;
  principal_amount: string | number;
  interest_amount: string | number;
  arrears_amount: string | number;
  effect: string;
  source: string;
  allocated_at: Date;
}

/**
 * The Transaction resource (spec 2) of an event: a repayment is its push; a reversal or waiver
 * an adjustment of its own (the schema is api/mobile-money/views.ts).
 */
export function eventTransaction(event: LoanEventFields) {
  if (event.push) return transactionView(event.push);
  const at = event.created_at.toISOString();
  return {
    id: event.id,
    resource_id: event.resource_id,
    status: 'POSTED' as const,
    mobilemoney_transaction_id: null,
    amount: { value: Number(event.amount), currency: event.currency },
    fee_amount: { value: 0, currency: event.currency },
    failure_reason: null,
    transacted_at: at,
    confirmed_at: at,
    posted_at: at,
    failed_at: null,
    details: {
      type: event.kind as 'REVERSAL' | 'WAIVER',
      direction: 'ADJUSTMENT' as const,
      account_id: event.account_id,
      ...(event.reverses_id && { reverses_id: event.reverses_id }),
      ...(event.kind === 'WAIVER' && event.loan_id && { loan_id: event.loan_id }),
      ...(event.reason && { reason: event.reason }),
    },
  };
}

/** The InstallmentAllocation resource (its schema is api/loans/transactions.ts). */
export function allocationView(row: AllocationFields) {
  return {
    id: row.id,
    balance_id: row.installment_id,
    cycle_id: row.loan_id,
    position: row.position,
    allocated_amount: Number(row.allocated_amount),
    principal_amount: Number(row.principal_amount),
    interest_amount: Number(row.interest_amount),
    arrears_amount: Number(row.arrears_amount),
    allocated_at: row.allocated_at.toISOString(),
    effect: row.effect,
    source: row.source,
  };
}

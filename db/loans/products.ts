import type { Knex } from 'knex';
import type { OfferTerms, PeriodUnit } from '../../domain/loans/terms';

/** A lending product of an organization (migration 20261123100000_loans). */
export interface LoanProductRow {
  id: string;
  organization_id: string;
  code: string;
  name: string;
  product_type: 'FLAT_RATE' | 'REVOLVING_CREDIT';
  currency: string;
  interest_bps: number;
  interest_period_value: number;
  interest_period_unit: PeriodUnit;
  standard_interest_bps: number;
  standard_interest_period_value: number;
  standard_interest_period_unit: PeriodUnit;
  min_amount: string;
  max_amount: string;
  first_loan_limit: string;
  limit_step: string;
  tenure_unit: PeriodUnit;
  tenures: number[];
  default_tenure: number;
  collateral_bps: number;
  penalty_rate_bps: number;
  penalty_calculation_basis: string;
  penalty_type: string;
  penalty_period_days: number;
  penalty_trigger: string;
  penalty_grace_period_days: number;
  penalty_max_charge_days: number;
  offer_ttl_ms: string;
  /** REVOLVING_CREDIT only: the line's limit. */
  credit_limit: string | null;
}

/** The organization's product with this code (`standard`, `partner-a`, `partner-b`, `revolving`). */
export function findProduct(db: Knex, organizationId: string, code: string): Promise<LoanProductRow | undefined> {
  return db('loan_products').where({ organization_id: organizationId, code }).first();
}

/** The terms an offer on this product is made on (bigint columns arrive as strings). */
export function offerTerms(product: LoanProductRow): OfferTerms {
  return {
    productType: product.product_type,
    interest: {
      basisPoints: product.interest_bps,
      periodValue: product.interest_period_value,
      periodUnit: product.interest_period_unit,
    },
    standardInterest: {
      basisPoints: product.standard_interest_bps,
      periodValue: product.standard_interest_period_value,
      periodUnit: product.standard_interest_period_unit,
    },
    minAmount: Number(product.min_amount),
    maxAmount: Number(product.max_amount),
    tenureUnit: product.tenure_unit,
    tenures: product.tenures,
    collateralBasisPoints: product.collateral_bps,
    penalty: {
      rateBasisPoints: product.penalty_rate_bps,
      calculationBasis: product.penalty_calculation_basis,
      type: product.penalty_type,
      periodDays: product.penalty_period_days,
      trigger: product.penalty_trigger,
      gracePeriodDays: product.penalty_grace_period_days,
      maxChargeDays: product.penalty_max_charge_days,
    },
    ...(product.credit_limit !== null && { creditLimit: Number(product.credit_limit) }),
  };
}

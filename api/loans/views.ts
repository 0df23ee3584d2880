import { z } from 'zod';

/**
 * The loan application resource (spec 2) in the three field sets the spec lists: organization
 * create, partner-a create, and apply. Each schema is strict: a view answers exactly its set.
 */
const Rate = z.strictObject({
  basis_points: z.number().int(),
  period_value: z.number().int(),
  period_unit: z.string(),
});
const Tenure = z.strictObject({ duration: z.number().int(), unit: z.enum(['WEEKS', 'DAYS']) });
const TermsRange = z.strictObject({ min_loan_amount: z.number().int(), max_loan_amount: z.number().int() });
const penalty = {
  rate_basis_points: z.number().int(),
  calculation_basis: z.string().meta({ description: 'PRINCIPAL_AND_ARREARS' }),
  type: z.string().meta({ description: 'RECURRING' }),
  period_days: z.number().int(),
  trigger: z.string().meta({ description: 'AFTER_LOAN_END' }),
  grace_period_days: z.number().int(),
};
const status = z.enum(['APPROVED', 'ACCEPTED', 'DISBURSED', 'EXPIRED', 'CANCELLED']).meta({
  description:
    'APPROVED: an offer, open until expires_at → ACCEPTED (taken: collateral held, loan and schedule made) → DISBURSED (the ' +
    'principal is in the current account; the loan is ACTIVE). Or EXPIRED (expires_at passed untaken), or CANCELLED (the offer ' +
    'could not be opened). APPROVED, EXPIRED and CANCELLED are offers; an apply answers DISBURSED.',
});
const common = {
  id: z.uuid(),
  resource_id: z.string().meta({ description: 'lapp_<opaque>' }),
  status,
  account_id: z.uuid().meta({ description: "The borrower's credit account, where the loan lives" }),
  loan_product_type: z.enum(['FLAT_RATE', 'REVOLVING_CREDIT']),
  loan_amount: z
    .number()
    .int()
    .meta({ description: 'Minor units: on an offer the most the borrower may take; on an apply what was taken' }),
  tenure: Tenure,
  currency: z.string(),
  expires_at: z.string().meta({ description: "When the offer expires (ISO 8601 UTC); on an apply, the offer's" }),
};

export const OrganizationOffer = z
  .strictObject({
    ...common,
    interest_rate: Rate,
    standard_interest_rate: Rate,
    terms_range: TermsRange,
    penalty_terms: z.strictObject({ ...penalty, max_charge_days: z.number().int() }),
    credit_limit: z
      .number()
      .int()
      .optional()
      .meta({
        description:
          'REVOLVING_CREDIT only: the line’s limit (minor units); loan_amount is then what is available now, the limit less the ' +
          'principal its open cycles still owe',
      }),
  })
  .meta({ id: 'LoanApplicationOrganizationOffer' });

export const PartnerAOffer = z
  .strictObject({
    ...common,
    tenure_weeks: z.number().int(),
    weekly_interest_rate_basis_points: z.number().int(),
    terms_range: TermsRange,
    penalty_terms: z.strictObject(penalty),
  })
  .meta({ id: 'LoanApplicationPartnerAOffer' });

export const AppliedLoan = z
  .strictObject({
    ...common,
    tenure_weeks: z.number().int(),
    weekly_interest_rate_basis_points: z.number().int(),
    collateral_amount: z.number().int(),
    collateral_percentage_basis_points: z.number().int(),
    collateral_hold_id: z
      .uuid()
      .nullable()
      .meta({ description: 'The hold on the current account; null when no collateral is due' }),
    total_repayment_amount: z.number().int(),
  })
  .meta({ id: 'LoanApplicationApplied' });

export { appliedView, organizationOfferView, partnerAOfferView } from '../../domain/loans/views';

import { z } from 'zod';
import { Permission } from '../../domain/rbac';
import type { Needs } from '../deps';
import { IdempotencyKeyHeader } from '../middleware/idempotency';
import { type AnyRoute, defineRoute, type RouteAuth } from '../route';
import { AppliedLoan, organizationOfferView, OrganizationOffer, partnerAOfferView, PartnerAOffer } from './views';
import { loanOffers } from './offers';
import type { LoanWorkflows } from './workflows';

/** Borrowers (JWT), and partners and API keys acting for one (the body names the user). */
const LENDING: RouteAuth = {
  schemes: ['user', 'partner', 'api_key'],
  permission: Permission.LOANS_WRITE,
  refuseWaitingList: true,
};

const OfferRequest = z
  .strictObject({
    user_id: z.uuid().optional().meta({
      description: 'The borrower, when an organization API key or a partner token calls; a user token must not send it',
    }),
    loan_amount: z.number().int().positive().optional().meta({
      description: 'Minor units: the amount the borrower has in mind; refused (OVER_LIMIT) above their limit',
    }),
  })
  .meta({ id: 'LoanOfferRequest' });

/** The organization form may name which of the organization's products (its standard loan unless told). */
const OrganizationOfferRequest = OfferRequest.extend({
  product: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,63}$/)
    .optional()
    .meta({
      description:
        "The code of one of the organization's products: `standard` (the default, a weekly flat-rate loan), `revolving` (a " +
        'revolving credit line: the offer is one draw of at most the available credit; each draw taken opens a cycle with its ' +
        'own installments), or another the lender set up; an unknown code is 404',
    }),
}).meta({ id: 'LoanOrganizationOfferRequest' });

const Apply = z
  .strictObject({
    loan_amount: z.number().int().positive().meta({ description: 'Minor units, within the offer’s terms_range' }),
    tenure: z
      .number()
      .int()
      .positive()
      .meta({ description: "In the offer's tenure unit (weeks), one the product allows" }),
    collateral_amount: z.number().int().min(0).meta({
      description: "Minor units, at least the product's percentage of the loan amount; held on the current account",
    }),
  })
  .meta({ id: 'LoanApplyRequest' });

const PartnerBApply = z
  .strictObject({
    application_id: z.uuid().meta({ description: 'The offer (its id) being taken' }),
    loan_amount: z.number().int().positive(),
    tenure: z.strictObject({ duration: z.number().int().positive(), unit: z.enum(['WEEKS', 'DAYS']) }),
    collateral_amount: z.number().int().min(0),
  })
  .meta({ id: 'LoanPartnerBApplyRequest' });

const NOT_ELIGIBLE =
  'not eligible, the description starting with why: KYC_NOT_APPROVED, IN_ARREARS (a loan has an overdue installment), ' +
  'LOAN_RUNNING (a loan is not repaid yet), OVER_LIMIT (loan_amount above the limit, or the limit below the product minimum), ' +
  'ACCOUNT_NOT_ACTIVATED (the current account, which holds the collateral and receives the loan, is not activated yet), ' +
  'NO_ACCOUNT (no active current and credit account); or user_id sent with a user token or missing with another';
const APPLY_REFUSED =
  'the description starting with why: the offer has expired (OFFER_EXPIRED) or was taken (OFFER_TAKEN), terms outside the offer (OUT_OF_RANGE on loan_amount, tenure or ' +
  'collateral_amount), or a current-account available balance short of the collateral (INSUFFICIENT_FUNDS)';

export function loanApplicationRoutes(
  deps: Needs<'db' | 'clock', 'IDEMPOTENCY_WAIT'>,
  workflows: LoanWorkflows,
): AnyRoute[] {
  const { offer, apply } = loanOffers(deps, workflows);

  const offerRoute = (code: 'partner-a' | undefined) =>
    defineRoute({
      method: 'post',
      path: code ? `/v1/accounts/loan/applications/${code}` : '/v1/accounts/loan/applications/{organization}',
      operationId: code ? 'getPartnerALoanTerms' : 'getOrganizationLoanTerms',
      summary: code
        ? 'Loan eligibility and terms for the partner-a product'
        : "Loan eligibility and terms for the organization's product",
      description:
        'With a user token the caller is the borrower; with an organization API key or a partner token the body names user_id. ' +
        'An eligible borrower gets an offer (status APPROVED, 201) open until expires_at, when it expires by itself (EXPIRED); ' +
        'asking again while it is open answers the same offer (200). The limit: the product’s first-loan limit, raised by its ' +
        'step for every loan repaid without arrears, never above its maximum.',
      tags: ['loans'],
      auth: LENDING,
      request: code
        ? { body: OfferRequest }
        : { params: z.object({ organization: z.string().min(1).max(255) }), body: OrganizationOfferRequest },
      responses: {
        201: { description: 'A new offer', schema: code ? PartnerAOffer : OrganizationOffer },
        200: { description: 'The open offer', schema: code ? PartnerAOffer : OrganizationOffer },
      },
      errors: {
        BAD_REQUEST: NOT_ELIGIBLE,
        NOT_FOUND: 'no such organization, product or user (another organization is not confirmed)',
        CONFLICT:
          'other requests for the borrower, on other terms, replaced the offer while this one was made, five times over: ask again',
      },
      async handler(ctx, input) {
        const params = (input as { params?: { organization: string } }).params;
        const product = (input.body as { product?: string }).product;
        const row = await offer(ctx, code ?? product ?? 'standard', input.body, params?.organization);
        ctx.body = code ? partnerAOfferView(row) : organizationOfferView(row);
      },
    });

  const partnerB = defineRoute({
    method: 'post',
    path: '/v1/accounts/loan/applications/partner-b',
    operationId: 'applyForLoan',
    summary: 'Take a loan offer: collateral held, loan and schedule made, principal disbursed',
    description:
      'Replaces POST /v1/accounts/credit/applications/{application_id}/apply. Takes the offer named by application_id on the ' +
      "borrower's terms: the collateral is held on the current account, the loan and its installment schedule are made on the " +
      'credit account, and the principal is paid into the current account through the ledger, exactly once whatever is ' +
      'retried. Answers the application, DISBURSED, with the apply fields. Honours Idempotency-Key.',
    tags: ['loans'],
    auth: LENDING,
    idempotent: true,
    request: { headers: IdempotencyKeyHeader, body: PartnerBApply },
    responses: { 200: { description: 'The loan application, DISBURSED', schema: AppliedLoan } },
    errors: {
      BAD_REQUEST: APPLY_REFUSED,
      NOT_FOUND: 'no such loan application of the caller',
      SERVICE_UNAVAILABLE:
        'other acceptances of the offer kept it busy past IDEMPOTENCY_WAIT, or this request took it and its loan is ' +
        'still being paid out past it: send it again (with the same Idempotency-Key) after Retry-After',
    },
    async handler(ctx, { body }) {
      await apply(ctx, body.application_id, {
        loanAmount: body.loan_amount,
        tenure: body.tenure.duration,
        tenureUnit: body.tenure.unit,
        collateralAmount: body.collateral_amount,
      });
    },
  });

  const legacyApply = defineRoute({
    ...partnerB,
    path: '/v1/accounts/credit/applications/{application_id}/apply',
    operationId: 'applyForCreditDeprecated',
    summary: 'Take a loan offer (deprecated: use POST /v1/accounts/loan/applications/partner-b)',
    description: `Deprecated alias of POST ${partnerB.path}: the tenure is in the offer's unit (weeks).`,
    deprecated: true,
    deprecation: { successor: partnerB.path },
    request: {
      headers: IdempotencyKeyHeader,
      params: z.object({ application_id: z.string().min(1).max(255) }),
      body: Apply,
    },
    async handler(ctx, { params, body }) {
      await apply(ctx, params.application_id, {
        loanAmount: body.loan_amount,
        tenure: body.tenure,
        collateralAmount: body.collateral_amount,
      });
    },
  });

  return [offerRoute('partner-a'), partnerB, legacyApply, offerRoute(undefined)];
}

import type { Knex } from 'knex';
import { agentNetwork, seedAgentNetwork } from './agents';
import type { Role } from '../../domain/rbac';

/**
 * Demo data with stable ids, so a client developer can call the service in minutes
 * (`npm run --silent seed:ids` prints them). Applied on every `npm start`: rows are upserted,
 * so a changed seed takes effect and nothing is duplicated.
 */
const user = (
  id: string,
  organizationId: string,
  email: string,
  name: string,
  roles: Role[],
  extra: { auth_id?: string; status?: 'ACTIVE' | 'WAITING_LIST'; phone_number?: string } = {},
) => ({
  id,
  organization_id: organizationId,
  email,
  name,
  roles,
  auth_id: extra.auth_id ?? null,
  status: extra.status ?? 'ACTIVE',
  phone_number: extra.phone_number ?? null,
});

/** A weekly flat-rate product's terms; the three differ in rate, tenures and limits. */
const product = (code: string, name: string, terms: { bps: number; tenures: number[]; max: number }) => ({
  code,
  name,
  product_type: 'FLAT_RATE',
  currency: 'KES',
  interest_bps: terms.bps,
  interest_period_value: 7,
  interest_period_unit: 'DAYS',
  standard_interest_bps: terms.bps + 50,
  standard_interest_period_value: 7,
  standard_interest_period_unit: 'DAYS',
  min_amount: 100_000,
  max_amount: terms.max,
  first_loan_limit: 1_000_000,
  limit_step: 500_000,
  tenure_unit: 'WEEKS',
  tenures: terms.tenures,
  default_tenure: terms.tenures.at(-1)!,
  collateral_bps: 1_000,
  penalty_rate_bps: 100,
  penalty_calculation_basis: 'PRINCIPAL_AND_ARREARS',
  penalty_type: 'RECURRING',
  penalty_period_days: 7,
  penalty_trigger: 'AFTER_LOAN_END',
  penalty_grace_period_days: 3,
  penalty_max_charge_days: 90,
  offer_ttl_ms: 24 * 3_600_000,
  credit_limit: null as number | null,
});
const LOAN_PRODUCTS = [
  product('standard', 'Standard loan', { bps: 250, tenures: [1, 2, 3, 4], max: 5_000_000 }),
  product('partner-a', 'Partner A weekly loan', { bps: 300, tenures: [1, 2, 3, 4], max: 3_000_000 }),
  product('partner-b', 'Partner B weekly loan', { bps: 275, tenures: [1, 2, 4, 8], max: 5_000_000 }),
  // Revolving credit: a KES 20,000 line; each draw (at most what is available) repays weekly.
  {
    ...product('revolving', 'Revolving credit line', { bps: 250, tenures: [1, 2, 4], max: 2_000_000 }),
    product_type: 'REVOLVING_CREDIT',
    credit_limit: 2_000_000,
  },
];

const DEMO_ORG = 'org-demo-lender';
const SECOND_ORG = 'org-second-lender';

export const DEMO = {
  organizations: {
    demo: { id: DEMO_ORG, name: 'Demo Lender' },
    second: { id: SECOND_ORG, name: 'Second Lender' },
  },
  users: {
    customer: user(
      '0b5a9c1e-0000-4000-8000-000000000001',
      DEMO_ORG,
      'amina.customer@demo-lender.test',
      'Amina Wanjiru',
      ['CUSTOMER'],
      { phone_number: '+254712000010' },
    ),
    customerByAuthId: user(
      '0b5a9c1e-0000-4000-8000-000000000002',
      DEMO_ORG,
      'brian.customer@demo-lender.test',
      'Brian Otieno',
      ['CUSTOMER'],
      // Ends in 0: the mobile-money simulator pays his deposits.
      { auth_id: 'idp|brian-otieno', phone_number: '+254712000020' },
    ),
    /** Verified (KYC APPROVED through the flow at npm start), the current account not activated yet. */
    verifiedCustomer: user(
      '0b5a9c1e-0000-4000-8000-000000000013',
      DEMO_ORG,
      'neema.customer@demo-lender.test',
      'Neema Achieng',
      ['CUSTOMER'],
      { phone_number: '+254712000130' },
    ),
    waitingList: user(
      '0b5a9c1e-0000-4000-8000-000000000003',
      DEMO_ORG,
      'wanjiku.waiting@demo-lender.test',
      'Wanjiku Kamau',
      ['CUSTOMER'],
      { status: 'WAITING_LIST', phone_number: '+254712000003' },
    ),
    agent: user(
      '0b5a9c1e-0000-4000-8000-000000000004',
      DEMO_ORG,
      'juma.agent@demo-lender.test',
      'Juma Mwangi',
      ['AGENT'],
      { phone_number: '+254712000004' },
    ),
    manager: user(
      '0b5a9c1e-0000-4000-8000-000000000005',
      DEMO_ORG,
      'halima.manager@demo-lender.test',
      'Halima Said',
      ['MANAGER'],
      { phone_number: '+254712000005' },
    ),
    leader: user(
      '0b5a9c1e-0000-4000-8000-000000000006',
      DEMO_ORG,
      'peter.leader@demo-lender.test',
      'Peter Kariuki',
      ['LEADER'],
      { phone_number: '+254712000006' },
    ),
    admin: user('0b5a9c1e-0000-4000-8000-000000000007', DEMO_ORG, 'grace.admin@demo-lender.test', 'Grace Njeri', [
      'ADMIN',
    ]),
    internal: user('0b5a9c1e-0000-4000-8000-000000000008', DEMO_ORG, 'ops@demo-lender.test', 'Demo Lender Operations', [
      'INTERNAL',
    ]),
    platformAdmin: user(
      '0b5a9c1e-0000-4000-8000-000000000009',
      DEMO_ORG,
      'platform.admin@lending-service.test',
      'Platform Operator',
      ['PLATFORM_ADMIN'],
      { auth_id: 'idp|platform-operator' },
    ),
    secondCustomer: user(
      '0b5a9c1e-0000-4000-8000-000000000011',
      SECOND_ORG,
      'daudi.customer@second-lender.test',
      'Daudi Hassan',
      ['CUSTOMER'],
      { phone_number: '+255712000011' },
    ),
    secondInternal: user(
      '0b5a9c1e-0000-4000-8000-000000000012',
      SECOND_ORG,
      'ops@second-lender.test',
      'Second Lender Operations',
      ['INTERNAL'],
    ),
  },
  partner: {
    id: '5e1f2a3b-0000-4000-8000-000000000001',
    organization_id: DEMO_ORG,
    name: 'Demo Partner Bank',
    issuer: 'https://partner.demo-lender.test',
    permissions: ['loans.write:ORG', 'loans.read:ORG', 'accounts.read:ORG'],
  },
  /** Current and credit accounts of the demo customers (balances come from the ledger). */
  accounts: {
    customerCurrent: { id: 'acc00000-0000-4000-8000-000000000001', userKey: 'customer', type: 'CURRENT' },
    customerCredit: { id: 'acc00000-0000-4000-8000-000000000002', userKey: 'customer', type: 'CREDIT' },
    secondCustomerCurrent: { id: 'acc00000-0000-4000-8000-000000000011', userKey: 'secondCustomer', type: 'CURRENT' },
    verifiedCustomerCurrent: {
      id: 'acc00000-0000-4000-8000-000000000013',
      userKey: 'verifiedCustomer',
      type: 'CURRENT',
    },
    verifiedCustomerCredit: { id: 'acc00000-0000-4000-8000-000000000014', userKey: 'verifiedCustomer', type: 'CREDIT' },
    /** Brian is active (his current account activated at npm start): he may borrow (his loan goes to the credit account, the money to the current one). */
    borrowerCurrent: { id: 'acc00000-0000-4000-8000-000000000003', userKey: 'customerByAuthId', type: 'CURRENT' },
    borrowerCredit: { id: 'acc00000-0000-4000-8000-000000000004', userKey: 'customerByAuthId', type: 'CREDIT' },
  },
  /**
   * One demo customer at each stage of the lifecycle (dev/customer-stages.ts). The seed opens them
   * as signed up (stage new); `npm start` takes the others on through the API, so each stage is
   * reached as a client app reaches it.
   */
  customerStages: {
    customer: { stage: 'new' },
    verifiedCustomer: { stage: 'kyc-approved', idNumber: '27182810', dateOfBirth: '1992-07-19' },
    customerByAuthId: { stage: 'active', idNumber: '31415920', dateOfBirth: '1988-11-02' },
  },
  /** Every organization's lending products (the same terms in each; amounts in minor units of KES). */
  loanProducts: LOAN_PRODUCTS,
  /** A DRAFT KYC application ready for a verification submission. */
  kycApplication: { id: 'a11ce000-0000-4000-8000-000000000001', userKey: 'customer' },
  /** Finished verifications, for reading: one approved, one rejected that may be submitted again. */
  kycHistory: {
    approved: {
      id: 'a11ce000-0000-4000-8000-000000000002',
      userKey: 'customerByAuthId',
      status: 'APPROVED',
      outcome: 'PASS',
      result_code: '0810',
      reason: 'Document Verified',
      resubmission_count: 0,
    },
    rejected: {
      id: 'a11ce000-0000-4000-8000-000000000011',
      userKey: 'secondCustomer',
      status: 'REJECTED',
      outcome: 'FAIL',
      result_code: '1022',
      reason: 'No Match',
      resubmission_count: 1,
    },
  },
  merchant: {
    id: 'mrc-demo-0001',
    organization_id: DEMO_ORG,
    name: 'Kariakoo Traders',
    /** The financing identity provider's subject allowed to act for the merchant. */
    financingSubject: 'fin|kariakoo-owner',
    permissions: ['financing.read', 'financing.write'],
  },
} as const;

/**
 * The demo agent networks: in the demo organization two leaders with two managers each and six
 * agents per manager (the demo's leader, manager and agent users at the top of the first branch),
 * enough to page through; a small one in the second organization.
 */
export const AGENT_NETWORKS = {
  [DEMO_ORG]: agentNetwork(
    DEMO_ORG,
    { leaders: 2, managersPerLeader: 2, agentsPerManager: 6, idPrefix: 'a9e70001' },
    { leader: DEMO.users.leader, manager: DEMO.users.manager, agent: DEMO.users.agent },
  ),
  [SECOND_ORG]: agentNetwork(SECOND_ORG, {
    leaders: 1,
    managersPerLeader: 1,
    agentsPerManager: 3,
    idPrefix: 'a9e70002',
  }),
};

export interface SeedOptions {
  /** Where the demo partner publishes its JWKS (the development identity provider). */
  partnerJwksUrl: string;
  /** The financing issuer whose subject is granted access to the demo merchant. */
  financingIssuer: string;
}

export async function seedDemoData(db: Knex, options: SeedOptions): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('organizations').insert(Object.values(DEMO.organizations)).onConflict('id').merge();
    const users = Object.values(DEMO.users);
    await trx('users')
      .insert(users.map(({ roles: _roles, ...row }) => row))
      .onConflict('id')
      .merge();
    await trx('user_access')
      .insert(
        users.flatMap((u) => u.roles.map((role) => ({ user_id: u.id, organization_id: u.organization_id, role }))),
      )
      .onConflict(['user_id', 'organization_id', 'role'])
      .ignore();
    for (const [organizationId, network] of Object.entries(AGENT_NETWORKS))
      await seedAgentNetwork(trx, organizationId, network);
    const { partner, merchant } = DEMO;
    await trx('partners')
      .insert({ ...partner, permissions: [...partner.permissions], jwks_url: options.partnerJwksUrl })
      .onConflict('id')
      .merge();
    await trx('merchants')
      .insert({ id: merchant.id, organization_id: merchant.organization_id, name: merchant.name })
      .onConflict('id')
      .merge();
    await trx('accounts')
      .insert(
        Object.values(DEMO.accounts).map((account) => ({
          id: account.id,
          organization_id: DEMO.users[account.userKey].organization_id,
          user_id: DEMO.users[account.userKey].id,
          type: account.type,
          currency: 'KES',
          // Signed up: the current account waits for its activation (npm start activates the active stage's).
          status: account.type === 'CURRENT' ? 'PENDING_ACTIVATION' : 'ACTIVE',
        })),
      )
      .onConflict('id')
      .ignore();
    await trx('loan_products')
      .insert(
        Object.values(DEMO.organizations).flatMap((organization) =>
          LOAN_PRODUCTS.map((loanProduct) => ({ ...loanProduct, organization_id: organization.id })),
        ),
      )
      .onConflict(['organization_id', 'code'])
      .merge();
    const applicant = DEMO.users[DEMO.kycApplication.userKey];
    // Only when the applicant has no active application: a demo in progress is left alone.
    const active = await trx('kyc_applications')
      .where({ user_id: applicant.id })
      .whereIn('status', ['DRAFT', 'ID_VERIFICATION_PENDING'])
      .first();
    if (!active) {
      await trx('kyc_applications')
        .insert({
          id: DEMO.kycApplication.id,
          organization_id: applicant.organization_id,
          user_id: applicant.id,
          status: 'DRAFT',
        })
        .onConflict('id')
        .ignore();
    }
    await trx('kyc_applications')
      .insert(
        Object.values(DEMO.kycHistory).map(({ userKey, ...application }) => ({
          ...application,
          organization_id: DEMO.users[userKey].organization_id,
          user_id: DEMO.users[userKey].id,
          channel: 'server_upload',
          api_version: 'v2',
          submitted_at: new Date('2026-01-05T09:00:00Z'),
          verification_completed_at: new Date('2026-01-05T09:02:00Z'),
        })),
      )
      .onConflict('id')
      .ignore();
    await trx('merchant_access')
      .insert({
        issuer: options.financingIssuer,
        subject: merchant.financingSubject,
        merchant_id: merchant.id,
        permissions: [...merchant.permissions],
      })
      .onConflict(['issuer', 'subject', 'merchant_id'])
      .merge();
  });
}

type CustomerKey = keyof typeof DEMO.customerStages;

/** The ids a script or client developer needs, as one JSON-friendly object. */
export function seedIds() {
  const users = Object.fromEntries(
    Object.entries(DEMO.users).map(([key, u]) => [
      key,
      {
        id: u.id,
        email: u.email,
        phone: u.phone_number ?? null,
        organization_id: u.organization_id,
        roles: u.roles,
        auth_id: u.auth_id,
        status: u.status,
        ...(key in DEMO.customerStages && { stage: DEMO.customerStages[key as CustomerKey].stage }),
      },
    ]),
  );
  return {
    organizations: { demo: DEMO.organizations.demo.id, second: DEMO.organizations.second.id },
    users,
    partner: { id: DEMO.partner.id, issuer: DEMO.partner.issuer, organization_id: DEMO.partner.organization_id },
    merchant: {
      id: DEMO.merchant.id,
      organization_id: DEMO.merchant.organization_id,
      financing_subject: DEMO.merchant.financingSubject,
    },
    kyc_application: { id: DEMO.kycApplication.id, user_id: DEMO.users[DEMO.kycApplication.userKey].id },
    kyc_applications: Object.fromEntries(
      Object.entries(DEMO.kycHistory).map(([key, a]) => [
        key,
        { id: a.id, status: a.status, user_id: DEMO.users[a.userKey].id },
      ]),
    ),
    /** The demo customers by the stage each is at once npm start is ready. */
    customers_by_stage: Object.fromEntries(
      Object.entries(DEMO.customerStages).map(([key, { stage }]) => [
        stage,
        { user: key, id: DEMO.users[key as CustomerKey].id, email: DEMO.users[key as CustomerKey].email },
      ]),
    ),
    accounts: Object.fromEntries(
      Object.entries(DEMO.accounts).map(([key, account]) => [
        key,
        { id: account.id, type: account.type, user_id: DEMO.users[account.userKey].id },
      ]),
    ),
  };
}

import { strict as assert } from 'node:assert';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createApiKey } from '../../api/auth/api-keys';
import { assignCustomer } from '../../db/agents/assignments';
import { openCustomerAccounts } from '../../db/accounts/accounts';
import { createApplication } from '../../db/kyc/applications';
import { createTransaction } from '../../db/mobile-money/transactions';
import { seedAgentNetwork } from '../../db/seeds/agents';
import { DEMO } from '../../db/seeds/demo';
import type { Role } from '../../domain/rbac';
import { reachStage, type Stage } from '../../dev/customer-stages';
import {
  AGENT_ORGANIZATION,
  type AgentName,
  CALLER_KINDS,
  CALLERS,
  type CallerKind,
  type Merchant,
  MERCHANT_ORGANIZATION,
  type Org,
  traits,
} from './authorization-matrix';
import { activation, activationWhen, codeSentTo } from './current-account';
import { invoicePdf, putDocument } from './financing';
import { harness } from './harness';
import { call } from './http';
import { JPEG_BASE64 } from './kyc';
import { applyPartnerB, loanOf, offerFor, repay } from './loans';
import { fund, stageClient, until } from './money';
import { backendToken, bearer, financingToken } from './tokens';

/**
 * The authorization matrix's world: two organizations of its own (so nothing another test file
 * reads or counts changes), one person or credential per caller kind, and the resources the
 * routes name, built as each route first needs them. Everything is made through the service's own
 * routes where a route makes it (offers, loans, activations, uploads), else inserted directly.
 */

export interface Person {
  id: string;
  organizationId: string;
  email: string;
  name: string;
  phone: string;
}

const db = () => harness().db;
/** A Kenyan mobile number whose last digit picks the mobile-money simulator's outcome. */
const kenyanMobile = (lastDigit = randomInt(0, 10)) => `+2547${randomInt(1_000_000, 9_999_999)}${lastDigit}`;
const JPEG = Buffer.from(JPEG_BASE64, 'base64');
/** Names are letters only (the bank refuses others): an id's hex digits spelt as letters. */
const nameOf = (label: string, id: string) =>
  `Matrix ${label} ${id.slice(0, 8).replace(/\d/g, (d) => 'ghijklmnop'[Number(d)]!)}`;

const tokens = new Map<string, Promise<string>>();
/** A backend bearer token of a person (one per person, reused). */
export function tokenOf(person: Person): Promise<string> {
  if (!tokens.has(person.id)) tokens.set(person.id, backendToken(person.id));
  return tokens.get(person.id)!;
}
export const headersOf = async (person: Person) => bearer(await tokenOf(person));

export async function newPerson(
  organizationId: string,
  role: Role,
  options: { waitingList?: boolean; lastDigit?: number } = {},
): Promise<Person> {
  const id = randomUUID();
  const person = {
    id,
    organizationId,
    email: `authz-${id}@matrix.test`,
    name: nameOf(role.toLowerCase(), id),
    phone: kenyanMobile(options.lastDigit),
  };
  await db()('users').insert({
    id,
    organization_id: organizationId,
    email: person.email,
    name: person.name,
    phone_number: person.phone,
    ...(options.waitingList && { status: 'WAITING_LIST' }),
  });
  await db()('user_access').insert({ user_id: id, organization_id: organizationId, role });
  return person;
}

export interface Accounts {
  current: string;
  credit: string;
}
/** The person signed up with their accounts, then taken to `stage` through the API (dev/customer-stages.ts). */
async function openAccounts(person: Person, stage: Stage = 'active'): Promise<Accounts> {
  const accounts = await openCustomerAccounts(db(), person.organizationId, person.id);
  await reachStage(stageClient(await tokenOf(person)), { phone: person.phone }, stage);
  return accounts;
}

/** An identity the provider verified, with its images: what activation and the subject lookups read. */
async function provision(person: Person, applicationId: string): Promise<void> {
  await db()('kyc_subjects').insert({
    id: randomUUID(),
    organization_id: person.organizationId,
    user_id: person.id,
    name: person.name,
    email: person.email,
    phone: person.phone,
    date_of_birth: '1991-02-03',
    identity_type: 'IDENTITY_CARD',
    id_number: String(randomInt(10_000_000, 99_999_999)),
    country: 'KE',
  });
  await db()('kyc_documents').insert(
    (['SELFIE', 'DOCUMENT_FRONT', 'DOCUMENT_BACK'] as const).map((kind) => ({
      id: randomUUID(),
      organization_id: person.organizationId,
      application_id: applicationId,
      kind,
      content_type: 'image/jpeg',
      content: JPEG,
      sha256: randomUUID(),
    })),
  );
}

/** A final transaction with its callback token (callbacks to it are LATE: recorded, nothing moves). */
async function failedTransaction(person: Person, accountId: string, type: 'STK_PUSH' | 'SEND_MONEY') {
  const id = randomUUID();
  const token = randomBytes(24).toString('base64url');
  await createTransaction(db(), person.organizationId, {
    id,
    resource_id: `trx_${randomBytes(12).toString('base64url')}`,
    account_id: accountId,
    type,
    amount: 10_000,
    fee_amount: 0,
    currency: 'KES',
    mobile_number: person.phone,
    details: { type: type === 'STK_PUSH' ? 'PAYBILL' : 'B2C', account_id: accountId },
    callback_token: token,
    transacted_at: new Date(),
  });
  await db()('transactions')
    .where({ id })
    .update({ status: 'FAILED', failed_at: new Date(), failure_reason: 'CANCELLED_BY_USER' });
  return { id, token };
}

/** Once per key; concurrent askers share the one build. */
function memo<T>(build: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= build());
}

/** A member of a household: the route subject ('customer'), its organization's peer, or another organization's. */
export type Member = 'customer' | 'peer' | 'foreign';
export const MEMBER_ORGANIZATION: Record<Member, Org> = { customer: 'own', peer: 'own', foreign: 'other' };
export const MEMBER_OWNER: Record<Member, CallerKind | undefined> = {
  customer: 'customer',
  peer: undefined,
  foreign: undefined,
};
async function household<T>(make: (org: Org) => Promise<T>): Promise<Record<Member, T>> {
  const [customer, peer, foreign] = await Promise.all([make('own'), make('own'), make('other')]);
  return { customer, peer, foreign };
}

export interface KycMember {
  person: Person;
  applicationId: string;
  jobId: string;
}
export interface MoneyMember {
  person: Person;
  accounts: Accounts;
  push: { id: string; token: string };
  payouts: { id: string; token: string }[];
}
export interface Borrower {
  person: Person;
  accounts: Accounts;
}
export interface LoanMember extends Borrower {
  applicationId: string;
  loanId: string;
  repaymentId: string;
  installmentId: string;
}

export type World = Awaited<ReturnType<typeof buildWorld>>;

/** The organizations, one identity per caller kind, and the households the routes draw on. */
export async function buildWorld() {
  const { idp, config } = harness();
  const tag = randomBytes(4).toString('hex');
  const organizations: Record<Org, string> = { own: `org-authz-${tag}`, other: `org-authz-${tag}-other` };
  await db()('organizations').insert([
    { id: organizations.own, name: 'Authorization matrix' },
    { id: organizations.other, name: 'Authorization matrix (other)' },
  ]);
  // Both organizations lend on the demo organization's products.
  const products = await db()('loan_products').where({ organization_id: DEMO.organizations.demo.id });
  await db()('loan_products').insert(
    Object.values(organizations).flatMap((organizationId) =>
      products.map(({ id: _id, created_at: _created, ...product }) => ({
        ...product,
        organization_id: organizationId,
      })),
    ),
  );
  const person = (org: Org, role: Role, options: { waitingList?: boolean; lastDigit?: number } = {}) =>
    newPerson(organizations[org], role, options);

  // The hierarchy: a manager over the agent and its peer; an agent of the other organization.
  const agentPeople = {} as Record<AgentName, Person>;
  const seedAgent = async (name: AgentName, supervisor: string | null) => {
    const id = randomUUID();
    const organizationId = organizations[AGENT_ORGANIZATION[name]];
    const agent = {
      id,
      organizationId,
      email: `authz-${id}@matrix.test`,
      name: nameOf(name, id),
      phone: kenyanMobile(),
    };
    await seedAgentNetwork(db(), organizationId, [
      {
        organization_id: organizationId,
        user_id: id,
        role: name === 'manager' ? 'MANAGER' : 'AGENT',
        name: agent.name,
        email: agent.email,
        phone_number: agent.phone,
        territory: 'Nairobi',
        status: 'ACTIVE',
        supervisor_user_id: supervisor,
      },
    ]);
    agentPeople[name] = agent;
  };
  await seedAgent('manager', null);
  await Promise.all([
    seedAgent('agent', agentPeople.manager.id),
    seedAgent('peerAgent', agentPeople.manager.id),
    seedAgent('foreignAgent', null),
  ]);

  // Every other user caller as its traits say: its organization, its role, its status.
  const users = CALLER_KINDS.filter((k) => traits(k).credential === 'user' && !(k in agentPeople));
  const made = await Promise.all(
    users.map((kind) => {
      const { organization, roles, waitingList } = traits(kind);
      return person(organization!, roles![0]!, { waitingList });
    }),
  );
  const people = {
    ...(Object.fromEntries(users.map((kind, i) => [kind, made[i]!])) as Record<
      'customer' | 'waitingCustomer' | 'admin' | 'ops' | 'foreignCustomer' | 'foreignOps',
      Person
    >),
    agent: agentPeople.agent,
    peerAgent: agentPeople.peerAgent,
    manager: agentPeople.manager,
  };

  // Merchants and the financing subjects that may act for each.
  const financingIssuer = idp.issuer('financing');
  const merchants = {} as Record<Merchant, string>;
  const subjects = {} as Record<Merchant, string>;
  for (const merchant of ['own', 'second', 'other'] as Merchant[]) {
    merchants[merchant] = `mrc-authz-${tag}-${merchant}`;
    subjects[merchant] = `fin|authz-${tag}-${merchant}`;
    const organizationId = organizations[MERCHANT_ORGANIZATION[merchant]];
    await db()('merchants').insert({ id: merchants[merchant], organization_id: organizationId, name: merchant });
    await db()('merchant_access').insert({
      issuer: financingIssuer,
      subject: subjects[merchant],
      merchant_id: merchants[merchant],
      permissions: ['financing.read', 'financing.write'],
    });
  }
  const financingCredential = (merchant: Merchant) =>
    financingToken('financing', subjects[merchant], {
      organization_id: organizations[MERCHANT_ORGANIZATION[merchant]],
      permissions: ['financing.read:ORG', 'financing.write:ORG'],
    });

  // The organization's partner: registered with a key of its own, its JWT exchanged for access.
  const partnerKey = await generateKeyPair('RS256');
  const partnerIssuer = `https://authz-${tag}.partner.test`;
  await db()('partners').insert({
    id: randomUUID(),
    organization_id: organizations.own,
    name: 'Authorization matrix partner',
    issuer: partnerIssuer,
    public_jwk: { ...(await exportJWK(partnerKey.publicKey)), kid: tag, alg: 'RS256' },
    permissions: [...CALLERS.partner.permissions],
  });
  const partnerAssertion = await new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: tag })
    .setIssuer(partnerIssuer)
    .setAudience(config.PARTNER_EXCHANGE_AUDIENCE)
    .setSubject('authz-matrix')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(partnerKey.privateKey);
  // The exchange reads its partners again at most once a second: a new one may take a moment.
  const partnerAccess = await until(
    'the partner exchange',
    async () => {
      const reply = await call('POST', '/v1/auth/exchange', { headers: bearer(partnerAssertion), json: {} });
      return reply.status === 200 ? (reply.body.access_token as string) : undefined;
    },
    5_000,
    200,
  );

  /** Each caller kind's credential, made as its traits say (an API key holds exactly the traits' grants). */
  const credentialOf = async (kind: CallerKind): Promise<string | undefined> => {
    const { credential, organization, permissions, merchant } = traits(kind);
    switch (credential) {
      case 'none':
        return undefined;
      case 'expired':
        return backendToken(people.customer.id, {}, { expiresIn: -3_600 });
      case 'partnerJwt':
        return partnerAssertion;
      case 'partner':
        return partnerAccess;
      case 'financing':
        return financingCredential(merchant!);
      case 'user':
        return tokenOf(people[kind as keyof typeof people]);
      case 'api_key': {
        const names = permissions!.map((grant) => grant.split(':')[0]!);
        const scope = organization ? { organizationId: organizations[organization] } : { platform: true };
        return (await createApiKey(db(), { ...scope, permissions: names })).key;
      }
    }
  };
  const credentials = Object.fromEntries(
    await Promise.all(CALLER_KINDS.map(async (kind) => [kind, await credentialOf(kind)] as const)),
  ) as Record<CallerKind, string | undefined>;

  const kycMember = async (org: Org): Promise<KycMember> => {
    const member = await person(org, 'CUSTOMER');
    const application = (await createApplication(db(), member.organizationId, member.id))!;
    const jobId = randomUUID();
    await db()('kyc_applications').where({ id: application.id }).update({ job_id: jobId });
    await provision(member, application.id);
    return { person: member, applicationId: application.id, jobId };
  };
  const moneyMember = async (org: Org): Promise<MoneyMember> => {
    // Phone ending 1: a push to it is cancelled at the simulator, so an allowed push moves no money.
    const member = await person(org, 'CUSTOMER', { lastDigit: 1 });
    const accounts = await openAccounts(member);
    await fund(accounts.current, 1_000_000);
    return {
      person: member,
      accounts,
      push: await failedTransaction(member, accounts.current, 'STK_PUSH'),
      // One per callback route of payouts (result, timeout, status result, status timeout): each
      // transaction stores only CALLBACKS_STORED_PER_RESOURCE callbacks.
      payouts: [
        await failedTransaction(member, accounts.current, 'SEND_MONEY'),
        await failedTransaction(member, accounts.current, 'SEND_MONEY'),
        await failedTransaction(member, accounts.current, 'SEND_MONEY'),
        await failedTransaction(member, accounts.current, 'SEND_MONEY'),
      ],
    };
  };
  const borrower = async (org: Org): Promise<Borrower> => {
    const member = await person(org, 'CUSTOMER');
    const accounts = await openAccounts(member);
    await fund(accounts.current, 500_000);
    return { person: member, accounts };
  };
  /** An open offer on the standard product, asked for by the borrower itself. */
  const offerOf = async (member: Borrower): Promise<string> => {
    const reply = await offerFor(
      await headersOf(member.person),
      `/v1/accounts/loan/applications/${member.person.organizationId}`,
    );
    assert.equal(reply.status, 201, reply.text);
    return reply.body.id as string;
  };
  /** A loan taken through the service and partly repaid (the repayment allocated). */
  const loanMember = async (org: Org): Promise<LoanMember> => {
    const member = await borrower(org);
    const headers = await headersOf(member.person);
    const applicationId = await offerOf(member);
    const applied = await applyPartnerB(headers, {
      application_id: applicationId,
      loan_amount: 200_000,
      tenure: { duration: 4, unit: 'WEEKS' },
      collateral_amount: 20_000,
    });
    assert.equal(applied.status, 200, applied.text);
    const repayment = await repay({ headers, credit: member.accounts.credit }, 10_000);
    const loanId = await loanOf(applicationId);
    const installment = await db()('installments').where({ loan_id: loanId }).orderBy('position').first('id');
    return { ...member, applicationId, loanId, repaymentId: repayment.id as string, installmentId: installment.id };
  };
  /** A customer whose current account waits for activation, with a provisioned identity. */
  const provisioned = async (org: Org = 'own') => {
    const member = await person(org, 'CUSTOMER');
    const accounts = await openAccounts(member, 'kyc-approved');
    return { person: member, accounts };
  };
  /** Its activation started through the service, and the code it was sent. */
  const awaitingCode = async () => {
    const member = await provisioned();
    const headers = await headersOf(member.person);
    const started = await activation.start(headers);
    assert.equal(started.status, 201, started.text);
    const code = await codeSentTo(member.person.phone);
    // Settled: the run has recorded the code as sent, and nothing moves until someone acts.
    await activationWhen(headers, (a) => a.status === 'AWAITING_OTP', 'activation AWAITING_OTP');
    return { ...member, activationId: started.body.id as string, code };
  };
  /** Activated through the service (the bank holds its customer): what a phone change needs. */
  const activate = async () => {
    const member = await awaitingCode();
    const headers = await headersOf(member.person);
    const confirmed = await activation.confirm(headers, member.code);
    assert.equal(confirmed.status, 200, confirmed.text);
    await activationWhen(headers, (a) => a.status === 'COMPLETED', 'activation COMPLETED').catch(async (error) => {
      throw new Error(`${String(error)}: ${(await activation.get(headers)).text}`);
    });
    return member;
  };
  /** A merchant's document presigned through the service; uploaded to the store when `upload` (its extraction ends at once). */
  const documentOf = async (merchant: Merchant, upload: boolean): Promise<string> => {
    const pdf = invoicePdf();
    const reply = await call('POST', `/v1/financing/merchants/${merchants[merchant]}/uploads/presign`, {
      headers: bearer(await financingCredential(merchant)),
      json: { document_type: 'INVOICE', content_type: 'application/pdf', size_bytes: pdf.length },
    });
    assert.equal(reply.status, 201, reply.text);
    if (upload) await putDocument(reply.body.url as string, pdf);
    return reply.body.upload_ref as string;
  };
  const assigned = async (agent: AgentName): Promise<Person> => {
    const organizationId = organizations[AGENT_ORGANIZATION[agent]];
    const member = await newPerson(organizationId, 'CUSTOMER');
    const by = agent === 'foreignAgent' ? agentPeople.foreignAgent.id : agentPeople.manager.id;
    await assignCustomer(db(), organizationId, {
      agentUserId: agentPeople[agent].id,
      customerUserId: member.id,
      by,
      reason: 'authorization matrix',
      now: new Date(),
    });
    return member;
  };

  const kycHousehold = memo(() => household(kycMember));
  const activatedPool: Awaited<ReturnType<typeof activate>>[] = [];
  return {
    organizations,
    people,
    agentPeople,
    credentials,
    merchants,
    subjects,
    financingCredential,
    newPerson: person,
    kycHousehold,
    /** The shared household with a fresh customer (its application is used up by the route). */
    freshKycHousehold: async () => ({ ...(await kycHousehold()), customer: await kycMember('own') }),
    kycMember,
    moneyHousehold: memo(() => household(moneyMember)),
    borrowers: memo(() => household(borrower)),
    borrower,
    offerOf,
    loanHousehold: memo(() => household(loanMember)),
    provisioned,
    awaitingCode,
    /** An activated customer, made ahead by `warm` (activations take a while) or now. */
    activated: async () => (activatedPool.pop() ?? activate()) as ReturnType<typeof activate>,
    /** Makes `count` activated customers side by side, for the routes that take one. */
    warmActivated: async (count: number) => {
      activatedPool.push(...(await Promise.all(Array.from({ length: count }, activate))));
    },
    documentOf,
    assigned,
  };
}

import { type Grant, grantsOfRoles, parseGrant, Permission, type Role, Scope } from '../../domain/rbac';

/**
 * The authorization matrix's table (issue 19, item 5): who each caller kind is, and each route's
 * rule, stated once. The status every (route, caller, target) cell must answer is derived from
 * these by `expectedOf`, never written per cell. The rules follow the README (Authentication and
 * authorization, and each area's "Who" paragraphs) where the spec leaves a status open.
 */

// ---------------------------------------------------------------------------------------------
// Caller kinds

export type Org = 'own' | 'other';
export type Scheme = 'user' | 'partner' | 'api_key' | 'financing';
export type Merchant = 'own' | 'second' | 'other';
/** Agents of the hierarchy a path can name: the matrix's agent, its peer, their manager, another organization's. */
export type AgentName = 'agent' | 'peerAgent' | 'manager' | 'foreignAgent';

export const MERCHANT_ORGANIZATION: Record<Merchant, Org> = { own: 'own', second: 'own', other: 'other' };
export const AGENT_ORGANIZATION: Record<AgentName, Org> = {
  agent: 'own',
  peerAgent: 'own',
  manager: 'own',
  foreignAgent: 'other',
};

export interface CallerTraits {
  says: string;
  /** A credential of one scheme, or none, an expired one, or the partner's own JWT (valid only at the exchange). */
  credential: Scheme | 'none' | 'expired' | 'partnerJwt';
  /** The organization it acts for; a platform key acts for none. */
  organization?: Org;
  roles?: Role[];
  /** API keys and the partner: grants as `permission:SCOPE`. */
  permissions?: string[];
  waitingList?: true;
  /** Financing subjects: the merchant they hold financing.read and financing.write on. */
  merchant?: Merchant;
  /** Agents it supervises (the manager: its agent and their peer). */
  supervises?: AgentName[];
}

/** What an organization key may do in the matrix (the organization's and the other organization's alike). */
export const ORGANIZATION_KEY_PERMISSIONS = [
  Permission.KYC_READ,
  Permission.ACCOUNTS_READ,
  Permission.LOANS_WRITE,
  Permission.LOANS_SERVICE,
  Permission.WEBHOOKS_MANAGE,
];
const orgGrants = (permissions: string[]) => permissions.map((p) => `${p}:${Scope.ORG}`);

export const CALLERS = {
  none: { says: 'no credentials', credential: 'none' },
  expired: { says: "an expired token of the organization's customer", credential: 'expired' },
  partnerAssertion: { says: "the partner's own JWT (a valid token of another scheme)", credential: 'partnerJwt' },
  customer: { says: 'a customer', credential: 'user', organization: 'own', roles: ['CUSTOMER'] },
  waitingCustomer: {
    says: 'a customer on the waiting list',
    credential: 'user',
    organization: 'own',
    roles: ['CUSTOMER'],
    waitingList: true,
  },
  agent: { says: 'an agent', credential: 'user', organization: 'own', roles: ['AGENT'] },
  peerAgent: { says: "the agent's peer (same manager)", credential: 'user', organization: 'own', roles: ['AGENT'] },
  manager: {
    says: 'their manager',
    credential: 'user',
    organization: 'own',
    roles: ['MANAGER'],
    supervises: ['agent', 'peerAgent'],
  },
  admin: { says: 'an admin', credential: 'user', organization: 'own', roles: ['ADMIN'] },
  ops: { says: 'operations staff', credential: 'user', organization: 'own', roles: ['INTERNAL'] },
  orgKey: {
    says: 'an organization API key',
    credential: 'api_key',
    organization: 'own',
    permissions: orgGrants(ORGANIZATION_KEY_PERMISSIONS),
  },
  platformKey: {
    says: 'a platform API key (default grants)',
    credential: 'api_key',
    permissions: [`${Permission.KYC_READ}:${Scope.PLATFORM}`],
  },
  partner: {
    says: "the organization's partner (access token)",
    credential: 'partner',
    organization: 'own',
    permissions: orgGrants([Permission.LOANS_WRITE, Permission.LOANS_READ, Permission.ACCOUNTS_READ]),
  },
  financing: { says: "a merchant's financing user", credential: 'financing', organization: 'own', merchant: 'own' },
  otherMerchant: {
    says: "another merchant's financing user (same organization)",
    credential: 'financing',
    organization: 'own',
    merchant: 'second',
  },
  foreignCustomer: {
    says: "another organization's customer",
    credential: 'user',
    organization: 'other',
    roles: ['CUSTOMER'],
  },
  foreignOps: {
    says: "another organization's operations staff",
    credential: 'user',
    organization: 'other',
    roles: ['INTERNAL'],
  },
  foreignKey: {
    says: "another organization's API key",
    credential: 'api_key',
    organization: 'other',
    permissions: orgGrants(ORGANIZATION_KEY_PERMISSIONS),
  },
} as const satisfies Record<string, CallerTraits>;
export type CallerKind = keyof typeof CALLERS;
export const CALLER_KINDS = Object.keys(CALLERS) as CallerKind[];
export const traits = (kind: CallerKind): CallerTraits => CALLERS[kind];

export function grantsOf(kind: CallerKind): Grant[] {
  const caller = traits(kind);
  if (caller.roles) return grantsOfRoles(caller.roles);
  return (caller.permissions ?? []).map(parseGrant).filter((g): g is Grant => g !== undefined);
}

/** The route checks its permission in the organization the caller acts for (PLATFORM scope: any). */
function holds(kind: CallerKind, permission: string): boolean {
  const acting = traits(kind).organization !== undefined;
  return grantsOf(kind).some((g) => g.permission === permission && (g.scope === Scope.PLATFORM || acting));
}

// ---------------------------------------------------------------------------------------------
// Route rules

/**
 * Whose resource a route acts on:
 * - caller: no resource is named; the caller acts on its own (its organization, its session...)
 * - own: the caller's own only (a user's)
 * - ownOrOrg: users their own (staff, where the rule names their permission, their organization's);
 *   partners and organization keys their organization's
 * - org: any of the caller's organization
 * - merchant: the merchant's in the path (after the merchant check)
 * - subtree: agents: the agent itself, the agents above it, or the organization's admins
 * - below: as subtree, but not the agent itself (403)
 * - lookup: internal KYC: the user themself, or kyc.read in the organization (a platform key may name it, and
 *   it must be the user's; without it the user's own is read; the matrix's key names it)
 * - borrower: lending: a user token borrows for itself (naming a user_id is 400), keys and partners
 *   name a borrower of their organization (none: 400), in the path's organization when it has one
 */
export type Whose = 'caller' | 'own' | 'ownOrOrg' | 'org' | 'merchant' | 'subtree' | 'below' | 'lookup' | 'borrower';

export interface Rule {
  /**
   * The schemes it accepts; `public` ignores credentials; `request` routes carry their own
   * credential in the request (a callback's URL token or signature, a refresh token) and ignore
   * the bearer; `partnerJwt` is the exchange.
   */
  auth: Scheme[] | 'public' | 'request' | 'partnerJwt';
  permission?: Permission;
  /** Users on the waiting list get 403 WAITING_LIST (checked before the permission). */
  waitingList?: 'refused';
  /** Merchant-scoped permission, through the financing issuer's resource access. */
  merchant?: Permission;
  scope?: Whose;
  success: number[];
  /** What a caller gets for a resource it may not see (404 unless said), or for a request credential not genuine. */
  hidden?: number;
  /** Caller scope: what a permitted caller without the route subject's state gets (none: every one succeeds). */
  absent?: number;
  /** ownOrOrg: users holding this permission (staff) reach the organization's, as keys and partners do. */
  staff?: Permission;
}

const PUBLIC: Rule = { auth: 'public', success: [200] };
const USER: Scheme[] = ['user'];
const LENDERS: Scheme[] = ['user', 'partner', 'api_key'];
const OPERATORS: Scheme[] = ['user', 'api_key'];
const CALLBACK: Rule = { auth: 'request', hidden: 404, success: [200] };
const KYC_CALLBACK: Rule = { auth: 'request', hidden: 401, success: [200] };
const APPLICANT = { auth: USER, permission: Permission.KYC_WRITE } as const;
const LOOKUP: Rule = { auth: OPERATORS, scope: 'lookup', success: [200] };
const SWEEP: Rule = { auth: USER, permission: Permission.ACCOUNTS_WRITE, scope: 'caller', success: [200] };
const PAYER = { auth: USER, permission: Permission.TRANSACTIONS_WRITE, waitingList: 'refused' } as const;
const LENDING = { auth: LENDERS, permission: Permission.LOANS_WRITE, waitingList: 'refused' } as const;
const READER = { auth: LENDERS, permission: Permission.ACCOUNTS_READ, waitingList: 'refused' } as const;
/** README, Loans: "the caller's own (a customer) or of the caller's organization (staff, keys)"; staff: loans.read. */
const INSTALLMENTS: Rule = { ...READER, scope: 'ownOrOrg', staff: Permission.LOANS_READ, success: [200] };
const OPERATOR = { auth: OPERATORS, permission: Permission.LOANS_SERVICE, scope: 'org' } as const;
const SELF = { auth: USER, waitingList: 'refused' } as const;
const AGENTS = { auth: USER, permission: Permission.AGENTS_READ, waitingList: 'refused' } as const;
/** Webhooks (extension): the organization's admins and keys holding webhooks.manage, for their organization. */
const WEBHOOKS = { auth: OPERATORS, permission: Permission.WEBHOOKS_MANAGE } as const;

/**
 * Every route's rule, keyed `METHOD /template` as in /openapi.json. The expiry sweep comes before
 * the KYC submissions on purpose: the matrix runs routes in this order, and a sweep's Postgres
 * effect (applications it expires) is only measurable while no application of the matrix is pending.
 */
export const RULES: Record<string, Rule> = {
  'GET /healthz': PUBLIC,
  'GET /readyz': PUBLIC,
  'GET /metrics': PUBLIC,
  'GET /openapi.json': PUBLIC,
  'GET /docs': PUBLIC,
  'GET /docs/assets/{asset}': PUBLIC,
  'GET /.well-known/jwks.json': PUBLIC,
  'POST /v1/auth/exchange': { auth: 'partnerJwt', success: [200] },
  'POST /v1/auth/refresh': { auth: 'request', hidden: 400, success: [200] },
  'POST /v1/auth/sessions': { auth: USER, scope: 'caller', success: [201] },
  'GET /v1/auth/whoami': { auth: ['user', 'partner', 'api_key', 'financing'], scope: 'caller', success: [200] },

  'POST /v1/internal/kyc/applications/expirations': SWEEP,
  'POST /api/internal/kyc/applications/expirations': SWEEP,
  'GET /v1/internal/kyc/status': LOOKUP,
  'GET /api/internal/kyc/status': LOOKUP,
  'GET /v1/internal/kyc/subjects/{user_id}': LOOKUP,
  'GET /api/internal/kyc/subjects/{user_id}': LOOKUP,
  'POST /v1/kyc/applications': { ...APPLICANT, scope: 'caller', success: [201] },
  'GET /v1/kyc/applications/{id}/verification': { ...APPLICANT, scope: 'own', success: [200] },
  'GET /v1/kyc/applications/{id}/verification/capture': { ...APPLICANT, scope: 'own', success: [200] },
  'POST /v1/kyc/applications/{id}/verification': { ...APPLICANT, scope: 'own', success: [202] },
  'POST /v1/kyc/applications/{id}/verification/capture': { ...APPLICANT, scope: 'own', success: [202] },
  'POST /v1/kyc/applications/{id}/verification/session': { ...APPLICANT, scope: 'own', success: [201] },
  'PATCH /v1/kyc/applications/{id}/verification/provider-job': { ...APPLICANT, scope: 'own', success: [200] },
  'GET /v1/kyc/applications/{id}/status': { ...APPLICANT, scope: 'own', success: [200] },
  'POST /v1/kyc/provider-callbacks/v2': KYC_CALLBACK,
  'POST /v1/kyc/provider-callbacks/v3': KYC_CALLBACK,

  // Spec 4.4 lists no 404 for these: another's account named in the body is 400 BAD_REQUEST.
  'POST /v1/transactions/mobilemoney/stk-push': { ...PAYER, scope: 'own', hidden: 400, success: [201] },
  'POST /v1/transactions/mobilemoney/send-money': { ...PAYER, scope: 'own', hidden: 400, success: [201] },
  'GET /v1/transactions/{id}': { ...READER, scope: 'ownOrOrg', success: [200] },
  'POST /v1/transactions/mobilemoney/callbacks/stk/{id}/{token}': CALLBACK,
  'POST /v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/result': CALLBACK,
  'POST /v1/transactions/mobilemoney/callbacks/b2c/{id}/{token}/timeout': CALLBACK,
  'POST /v1/transactions/mobilemoney/callbacks/b2c-status/{id}/{token}/result': CALLBACK,
  'POST /v1/transactions/mobilemoney/callbacks/b2c-status/{id}/{token}/timeout': CALLBACK,

  'POST /v1/accounts/loan/applications/partner-a': { ...LENDING, scope: 'borrower', absent: 400, success: [200, 201] },
  'POST /v1/accounts/loan/applications/{organization}': {
    ...LENDING,
    scope: 'borrower',
    absent: 400,
    success: [200, 201],
  },
  'POST /v1/accounts/loan/applications/partner-b': { ...LENDING, scope: 'ownOrOrg', success: [200] },
  'POST /v1/accounts/credit/applications/{application_id}/apply': { ...LENDING, scope: 'ownOrOrg', success: [200] },
  'GET /v1/accounts/{accountId}/installments': INSTALLMENTS,
  'GET /v1/accounts/{accountId}/installments/transactions': INSTALLMENTS,
  'GET /v1/accounts/{accountId}/installments/{id}/transactions': INSTALLMENTS,
  'POST /v1/accounts/{accountId}/installments/transactions/{transactionId}/reversal': { ...OPERATOR, success: [201] },
  'POST /v1/accounts/{accountId}/installments/waivers': { ...OPERATOR, success: [201] },

  'POST /v1/user/accounts/current/activation': { ...SELF, scope: 'caller', absent: 404, success: [201] },
  'GET /v1/user/accounts/current/activation': { ...SELF, scope: 'caller', absent: 404, success: [200] },
  'POST /v1/user/accounts/current/activation/otp/confirm': { ...SELF, scope: 'caller', absent: 404, success: [200] },
  'POST /v1/me/current-account/activations/{activationId}/otp/confirm': { ...SELF, scope: 'own', success: [200] },
  'POST /v1/user/accounts/current/activation/otp/resend': { ...SELF, scope: 'caller', absent: 404, success: [200] },
  'POST /v1/user/accounts/current/email/verifications': { ...SELF, scope: 'caller', success: [201] },
  'GET /v1/user/accounts/current/email/verifications/{emailVerificationId}': { ...SELF, scope: 'own', success: [200] },
  'POST /v1/user/accounts/current/email/verifications/{emailVerificationId}/confirm': {
    ...SELF,
    scope: 'own',
    success: [200],
  },
  'POST /v1/user/accounts/current/phone/changes': { ...SELF, scope: 'caller', absent: 404, success: [201] },
  'GET /v1/user/accounts/current/phone/changes/{changeId}': { ...SELF, scope: 'own', success: [200] },
  'POST /v1/user/accounts/current/phone/changes/{changeId}/authorize': { ...SELF, scope: 'own', success: [200] },
  'POST /v1/user/accounts/current/phone/changes/{changeId}/confirm': { ...SELF, scope: 'own', success: [200] },
  'POST /v1/current-account/callbacks/sms/delivery-reports/{token}': CALLBACK,

  'POST /v1/financing/merchants/{merchantId}/uploads/presign': {
    auth: ['financing'],
    merchant: Permission.FINANCING_WRITE,
    scope: 'merchant',
    success: [201],
  },
  'POST /v1/financing/merchants/{merchantId}/invoices': {
    auth: ['financing'],
    merchant: Permission.FINANCING_WRITE,
    scope: 'merchant',
    success: [201],
  },
  'GET /v1/financing/merchants/{merchantId}/invoices/{invoiceId}': {
    auth: ['financing'],
    merchant: Permission.FINANCING_READ,
    scope: 'merchant',
    success: [200],
  },

  'GET /v1/agents': { ...AGENTS, scope: 'caller', success: [200] },
  'GET /v1/agents/{userId}/customers': { ...AGENTS, scope: 'subtree', success: [200] },
  'POST /v1/agents/{userId}/customers': { ...AGENTS, scope: 'below', success: [200, 201] },
  'POST /v1/agents/{userId}/customers/{customerUserId}/unassign': { ...AGENTS, scope: 'below', success: [200] },

  'POST /v1/webhooks/endpoints': { ...WEBHOOKS, scope: 'caller', success: [201] },
  'GET /v1/webhooks/endpoints': { ...WEBHOOKS, scope: 'caller', success: [200] },
  'GET /v1/webhooks/endpoints/{id}': { ...WEBHOOKS, scope: 'org', success: [200] },
  'PATCH /v1/webhooks/endpoints/{id}': { ...WEBHOOKS, scope: 'org', success: [200] },
  'DELETE /v1/webhooks/endpoints/{id}': { ...WEBHOOKS, scope: 'org', success: [204] },
  'POST /v1/webhooks/endpoints/{id}/secret/rotate': { ...WEBHOOKS, scope: 'org', success: [200] },
  'GET /v1/webhooks/events': { ...WEBHOOKS, scope: 'caller', success: [200] },
  'GET /v1/webhooks/events/{id}': { ...WEBHOOKS, scope: 'org', success: [200] },
  'GET /v1/webhooks/events/{id}/deliveries': { ...WEBHOOKS, scope: 'org', success: [200] },
  'GET /v1/webhooks/endpoints/{id}/deliveries': { ...WEBHOOKS, scope: 'org', success: [200] },
  'POST /v1/webhooks/events/{id}/resend': { ...WEBHOOKS, scope: 'org', success: [202] },
  'POST /v1/webhooks/endpoints/{id}/resend': { ...WEBHOOKS, scope: 'org', success: [202] },
};

// ---------------------------------------------------------------------------------------------
// Targets and the derivation

/** What a request names, as the rules see it (the fixture adds the ids). */
export interface Target {
  label: string;
  /** The organization the resource belongs to. */
  organization?: Org;
  /** The caller kind it belongs to, when one of them owns it. */
  owner?: CallerKind;
  merchant?: Merchant;
  agent?: AgentName;
  /** A resource named under a parent it does not belong to (another account's installment...). */
  mismatch?: boolean;
  /** Request-credential routes: whether the request's own credential is genuine. */
  genuine?: boolean;
  /** Borrower routes: the organization in the path, and the borrower named in the body ('caller': none). */
  pathOrganization?: Org;
  borrower?: 'caller' | Org;
}

export type Expected = { allowed: true; statuses: number[] } | { allowed: false; status: number; code?: string };

const deny = (status: number, code?: string): Expected => ({ allowed: false, status, code });
const UNAUTHORISED = deny(401, 'UNAUTHORISED');
const FORBIDDEN = deny(403, 'FORBIDDEN');

export function agentVisible(kind: CallerKind, agent: AgentName): boolean {
  const caller = traits(kind);
  if (caller.organization !== AGENT_ORGANIZATION[agent]) return false;
  return holds(kind, Permission.AGENTS_ADMIN) || kind === agent || (caller.supervises ?? []).includes(agent);
}

/** The status a cell must answer, derived from the route's rule and the caller's and target's traits. */
export function expectedOf(rule: Rule, kind: CallerKind, target: Target | undefined): Expected {
  const caller = traits(kind);
  const allowed: Expected = { allowed: true, statuses: rule.success };
  const hiddenStatus = rule.hidden ?? 404;
  const hidden = deny(hiddenStatus, hiddenStatus === 404 ? 'NOT_FOUND' : undefined);
  if (rule.auth === 'public') return allowed;
  if (rule.auth === 'request') return target?.genuine ? allowed : hidden;
  if (rule.auth === 'partnerJwt') return caller.credential === 'partnerJwt' ? allowed : UNAUTHORISED;
  if (!rule.auth.includes(caller.credential as Scheme)) return UNAUTHORISED;
  if (rule.waitingList === 'refused' && caller.waitingList) return deny(403, 'WAITING_LIST');
  if (rule.permission && !holds(kind, rule.permission)) return FORBIDDEN;
  if (rule.merchant && target?.merchant) {
    const own = caller.merchant === target.merchant && MERCHANT_ORGANIZATION[target.merchant] === caller.organization;
    if (!own) return FORBIDDEN;
  }
  const sameOrganization = caller.organization !== undefined && caller.organization === target?.organization;
  const self = target?.owner === kind;
  const visible = (() => {
    switch (rule.scope) {
      case 'caller':
        return kind === 'customer' || rule.absent === undefined ? allowed : deny(rule.absent!);
      case 'own':
        return self ? allowed : hidden;
      case 'ownOrOrg': {
        const organizationWide = caller.credential !== 'user' || (rule.staff && holds(kind, rule.staff));
        return self || (organizationWide && sameOrganization) ? allowed : hidden;
      }
      case 'org':
        return sameOrganization ? allowed : hidden;
      case 'merchant':
        return allowed;
      case 'subtree':
      case 'below':
        if (!target?.agent || !agentVisible(kind, target.agent)) return hidden;
        return rule.scope === 'below' && kind === target.agent ? FORBIDDEN : allowed;
      case 'lookup':
        // A platform key reads the user's organization (naming it or not); everyone else acts for its own.
        if (caller.organization === undefined) return holds(kind, Permission.KYC_READ) ? allowed : FORBIDDEN;
        if (self) return allowed;
        if (!holds(kind, Permission.KYC_READ)) return FORBIDDEN;
        return sameOrganization ? allowed : hidden;
      case 'borrower':
        return borrowerRule(rule, kind, target);
      default:
        return allowed;
    }
  })();
  return visible.allowed && target?.mismatch ? hidden : visible;
}

function borrowerRule(rule: Rule, kind: CallerKind, target: Target | undefined): Expected {
  const caller = traits(kind);
  const allowed: Expected = { allowed: true, statuses: rule.success };
  const notFound = deny(404, 'NOT_FOUND');
  // Another organization in the path is not confirmed to exist, before anything about the borrower.
  if (target?.pathOrganization && target.pathOrganization !== caller.organization) return notFound;
  const user = caller.credential === 'user';
  if (target?.borrower === 'caller') {
    // A key or partner must name the borrower; a user borrows for itself (only the route's customer is eligible).
    if (!user) return deny(400, 'BAD_REQUEST');
    return kind === 'customer' ? allowed : deny(rule.absent!);
  }
  // A user naming a borrower is refused; a key or partner reaches its organization's only.
  if (user) return deny(400, 'BAD_REQUEST');
  return target?.borrower === caller.organization ? allowed : notFound;
}

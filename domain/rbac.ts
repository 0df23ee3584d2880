/**
 * Role-based access control, as pure data and checks. A permission is held at a scope: ORG
 * (only in the organization the caller acts for) or PLATFORM (in every organization).
 */
export const Scope = { ORG: 'ORG', PLATFORM: 'PLATFORM' } as const;
export type Scope = (typeof Scope)[keyof typeof Scope];

export const Permission = {
  ACCOUNTS_READ: 'accounts.read',
  ACCOUNTS_WRITE: 'accounts.write',
  KYC_READ: 'kyc.read',
  KYC_WRITE: 'kyc.write',
  LOANS_READ: 'loans.read',
  LOANS_WRITE: 'loans.write',
  /** Operators' servicing corrections: reversing a repayment, waiving amounts owed. */
  LOANS_SERVICE: 'loans.service',
  TRANSACTIONS_WRITE: 'transactions.write',
  AGENTS_READ: 'agents.read',
  /** Every agent of the organization, not only those the caller supervises. */
  AGENTS_ADMIN: 'agents.admin',
  FINANCING_READ: 'financing.read',
  FINANCING_WRITE: 'financing.write',
  /** The organization's webhook endpoints, their events and deliveries (secrets included). */
  WEBHOOKS_MANAGE: 'webhooks.manage',
} as const;
export type Permission = (typeof Permission)[keyof typeof Permission];

export interface Grant {
  permission: string;
  scope: Scope;
}

const org = (...permissions: Permission[]): Grant[] =>
  permissions.map((permission) => ({ permission, scope: Scope.ORG }));
const platform = (...permissions: Permission[]): Grant[] =>
  permissions.map((permission) => ({ permission, scope: Scope.PLATFORM }));

/** What each role may do. Customers act on their own resources; staff roles on their organization's. */
export const ROLE_GRANTS = {
  CUSTOMER: org(Permission.ACCOUNTS_READ, Permission.KYC_WRITE, Permission.LOANS_WRITE, Permission.TRANSACTIONS_WRITE),
  AGENT: org(Permission.AGENTS_READ, Permission.ACCOUNTS_READ),
  MANAGER: org(Permission.AGENTS_READ, Permission.ACCOUNTS_READ),
  LEADER: org(Permission.AGENTS_READ, Permission.ACCOUNTS_READ),
  ADMIN: org(
    Permission.AGENTS_READ,
    Permission.AGENTS_ADMIN,
    Permission.ACCOUNTS_READ,
    Permission.ACCOUNTS_WRITE,
    Permission.KYC_READ,
    Permission.LOANS_READ,
    Permission.LOANS_SERVICE,
    Permission.WEBHOOKS_MANAGE,
  ),
  /** Operations staff of one organization: may run its expiry sweep, read KYC status and correct loans. */
  INTERNAL: org(Permission.ACCOUNTS_WRITE, Permission.KYC_READ, Permission.LOANS_SERVICE),
  /** Platform operators: every organization. */
  PLATFORM_ADMIN: platform(
    Permission.ACCOUNTS_READ,
    Permission.ACCOUNTS_WRITE,
    Permission.KYC_READ,
    Permission.LOANS_READ,
  ),
} as const satisfies Record<string, Grant[]>;
export type Role = keyof typeof ROLE_GRANTS;

export function grantsOfRoles(roles: readonly string[]): Grant[] {
  return roles.flatMap((role) => (role in ROLE_GRANTS ? ROLE_GRANTS[role as Role] : []));
}

const PERMISSIONS = new Set<string>(Object.values(Permission));
export const isPermission = (name: string): name is Permission => PERMISSIONS.has(name);

/**
 * `name:SCOPE` strings, as carried in tokens and stored on keys and partners: exactly one known
 * permission and one scope, or nothing (`a:PLATFORM:ORG` must never read as PLATFORM).
 */
export function parseGrant(text: string): Grant | undefined {
  const parts = text.split(':');
  if (parts.length !== 2) return undefined;
  const [permission, scope] = parts as [string, string];
  if (!isPermission(permission) || (scope !== Scope.ORG && scope !== Scope.PLATFORM)) return undefined;
  return { permission, scope };
}
export const formatGrant = (grant: Grant) => `${grant.permission}:${grant.scope}`;

/**
 * Whether grants allow `permission` in `targetOrganization` for a caller acting for
 * `callerOrganization`: ORG scope covers only the caller's own organization, PLATFORM all.
 */
export function allows(
  grants: readonly Grant[],
  permission: string,
  callerOrganization: string | null,
  targetOrganization: string,
): boolean {
  return grants.some(
    (grant) =>
      grant.permission === permission &&
      (grant.scope === Scope.PLATFORM || (callerOrganization !== null && callerOrganization === targetOrganization)),
  );
}

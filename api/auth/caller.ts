import type { Grant } from '../../domain/rbac';

/** How a request authenticated; routes list the schemes they accept. */
export type AuthScheme =
  /** Backend bearer JWT: the identity provider's tokens, and the session ID tokens this service issues. */
  | 'user'
  /** Access tokens this service issued to a trusted partner through /v1/auth/exchange. */
  | 'partner'
  /** Organization-scoped or platform API keys. */
  | 'api_key'
  /** Financing bearer JWT from a configured trusted issuer. */
  | 'financing';

interface CallerBase {
  /** Stable key for rate limits and logs; never a secret. */
  id: string;
  /** The organization the caller acts for; null only for platform API keys. */
  organizationId: string | null;
  grants: Grant[];
}

export interface UserCaller extends CallerBase {
  scheme: 'user';
  userId: string;
  organizationId: string;
  status: 'ACTIVE' | 'WAITING_LIST' | 'DISABLED';
  /** Who issued the token: the identity provider, or this service (a session ID token). */
  via: 'identity_provider' | 'service';
}
export interface PartnerCaller extends CallerBase {
  scheme: 'partner';
  partnerId: string;
  organizationId: string;
}
export interface ApiKeyCaller extends CallerBase {
  scheme: 'api_key';
  keyId: string;
  platform: boolean;
}
export interface FinancingCaller extends CallerBase {
  scheme: 'financing';
  issuer: string;
  subject: string;
}

export type Caller = UserCaller | PartnerCaller | ApiKeyCaller | FinancingCaller;

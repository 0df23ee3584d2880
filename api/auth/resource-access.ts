import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { FinancingIssuer } from '../../config';
import { merchantAccessAllows } from '../../db/auth/merchants';

/** Answers whether a financing subject holds a merchant-scoped permission. */
export interface ResourceAccessProvider {
  allows(subject: string, merchantId: string, permission: string): Promise<boolean>;
}

/** Merchant access recorded in our database (merchant_access), for issuers we manage access for. */
export function databaseResourceAccess(db: Knex, issuer: string): ResourceAccessProvider {
  return {
    allows: (subject, merchantId, permission) => merchantAccessAllows(db, issuer, subject, merchantId, permission),
  };
}

/**
 * Merchant access answered by the issuer's resource-access service over HTTP:
 * `GET <url>?issuer&subject&merchant_id&permission` → `{allowed: boolean}`. Anything but a clear
 * yes is a no.
 */
export function httpResourceAccess(url: string, issuer: string, timeoutMs = 3_000): ResourceAccessProvider {
  return {
    async allows(subject, merchantId, permission) {
      const query = new URLSearchParams({ issuer, subject, merchant_id: merchantId, permission });
      const response = await fetch(`${url}?${query}`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) throw new Error(`resource-access service answered ${response.status}`);
      return ((await response.json()) as { allowed?: unknown }).allowed === true;
    },
  };
}

/**
 * A provider whose grants are remembered for `ttlMs` (AUTH_CALLER_CACHE_TTL): a revocation takes
 * effect within it, as for callers. Only grants: a refusal or a failure is asked again next time,
 * so a grant made a moment ago works at once.
 */
export function cachedResourceAccess(provider: ResourceAccessProvider, ttlMs: number): ResourceAccessProvider {
  const granted = new LRUCache<string, true>({ max: 50_000, ttl: ttlMs });
  return {
    async allows(subject, merchantId, permission) {
      const key = JSON.stringify([subject, merchantId, permission]);
      if (granted.get(key)) return true;
      const allowed = await provider.allows(subject, merchantId, permission);
      if (allowed) granted.set(key, true);
      return allowed;
    },
  };
}

/** The provider for each trusted financing issuer, chosen by the verified issuer, its grants cached for `ttlMs`. */
export function resourceAccessProviders(
  db: Knex,
  issuers: readonly FinancingIssuer[],
  ttlMs: number,
): Map<string, ResourceAccessProvider> {
  return new Map(
    issuers.map((issuer) => [
      issuer.issuer,
      cachedResourceAccess(
        issuer.resource_access === 'database'
          ? databaseResourceAccess(db, issuer.issuer)
          : httpResourceAccess(issuer.resource_access.url, issuer.issuer),
        ttlMs,
      ),
    ]),
  );
}

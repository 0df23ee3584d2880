import {
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config';
import type { Logger } from '../../config/logger';
import { findActivePartner } from '../../db/auth/partners';
import { findUserByAuthId, findUserById, userRoles } from '../../db/auth/users';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { type Grant, grantsOfRoles, parseGrant, Scope } from '../../domain/rbac';
import { isUuid } from '../../domain/identifiers';
import { unstorableText } from '../../domain/text';
import { API_KEY_PREFIX, findApiKey } from './api-keys';
import type { Caller, FinancingCaller, UserCaller } from './caller';
import { hashSecret } from './secrets';
import type { ServiceKeys } from './service-keys';

/** Header parameters that would let a token bring its own key: never honoured, always refused. */
const KEY_CARRYING_HEADERS = ['jwk', 'jku', 'x5u', 'x5c'] as const;

/** A claim fit for a query: a non-empty string of at most 255 characters that Postgres can store. */
const isClaimText = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= 255 && unstorableText(value) === undefined;

/** What our own tokens say they are. */
export const TokenUse = { ID: 'id', ACCESS: 'access' } as const;

/**
 * UNAUTHORISED with the reason kept for debug logs only: a client learns nothing about why.
 * Without credentials the challenge names the scheme alone (RFC 6750 3.1).
 */
export const unauthorised = (reason: string) =>
  Object.assign(
    new ServiceError(ErrorCode.UNAUTHORISED, undefined, [], {
      'WWW-Authenticate': reason === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"',
    }),
    {
      reason,
    },
  );

/** The credential of an `Authorization: Bearer <credential>` header, refused unread when over `maxBytes`. */
export function bearerToken(authorization: string | undefined, maxBytes: number): string {
  if (!authorization) throw unauthorised('missing');
  if (Buffer.byteLength(authorization) > maxBytes) throw unauthorised('too large');
  const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(authorization);
  if (!match) throw unauthorised('not a bearer token');
  return match[1]!;
}

/**
 * The target of a failed authentication, as a rate-limit key across source addresses: an API
 * key's prefix (hashed, so nothing a caller sent reaches the store as it is). Not a token's
 * subject: it is unverified, so keying a lockout on it would let anyone lock out any user by
 * naming her, and an RS256 signature cannot be guessed anyway.
 */
export function credentialTarget(authorization: string | undefined): string | undefined {
  const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
  return token?.startsWith(API_KEY_PREFIX)
    ? `target:${hashSecret(token.slice(0, API_KEY_PREFIX.length + 6))}`
    : undefined;
}

interface Verifier {
  key: JWTVerifyGetKey;
  audience: string;
  resolve(payload: JWTPayload & { sub: string }): Promise<Caller>;
}

export interface AuthenticatorDeps {
  config: Pick<
    Config,
    | 'AUTH_AUDIENCE'
    | 'AUTH_CALLER_CACHE_TTL'
    | 'AUTH_CLOCK_TOLERANCE'
    | 'AUTH_ISSUER'
    | 'AUTH_JWKS_CACHE_MAX_AGE'
    | 'AUTH_JWKS_COOLDOWN'
    | 'AUTH_JWKS_URL'
    | 'AUTH_MAX_HEADER_BYTES'
    | 'FINANCING_AUDIENCE'
    | 'FINANCING_ISSUERS'
    | 'SERVICE_TOKEN_AUDIENCE'
    | 'SERVICE_TOKEN_ISSUER'
  >;
  db: Knex;
  logger: Logger;
  serviceKeys: ServiceKeys;
}

/**
 * What an external financing issuer may grant: organization-scoped financing permissions only.
 * PLATFORM scope and every other permission stay ours to give.
 */
const financingGrants = (claim: unknown): Grant[] =>
  (Array.isArray(claim) ? claim : [])
    .map((g) => (typeof g === 'string' ? parseGrant(g) : undefined))
    .filter((g): g is Grant => g !== undefined && g.scope === Scope.ORG && g.permission.startsWith('financing.'));

/**
 * One verifier per trusted issuer: the service's own tokens (user sessions and partner access
 * tokens), the identity provider's when configured, and each financing issuer's.
 */
function issuerVerifiers(
  deps: AuthenticatorDeps,
  resolveUser: (subject: string, claimedOrganization: unknown, via: UserCaller['via']) => Promise<UserCaller>,
  cached: (key: string, load: () => Promise<Caller>) => Promise<Caller>,
): Map<string, Verifier> {
  const { config, db, serviceKeys } = deps;
  const remoteJwks = (url: string) =>
    createRemoteJWKSet(new URL(url), {
      cacheMaxAge: config.AUTH_JWKS_CACHE_MAX_AGE,
      cooldownDuration: config.AUTH_JWKS_COOLDOWN,
    });
  const verifiers = new Map<string, Verifier>();
  /** One verifier per issuer: a second one silently replacing the first would confuse schemes. */
  const register = (issuer: string, verifier: Verifier) => {
    if (verifiers.has(issuer))
      throw new Error(`issuer ${issuer} is configured twice (service, identity provider, financing)`);
    verifiers.set(issuer, verifier);
  };
  register(config.SERVICE_TOKEN_ISSUER, {
    key: serviceKeys.verifyKey,
    audience: config.SERVICE_TOKEN_AUDIENCE,
    async resolve(payload) {
      if (payload.token_use === TokenUse.ID) return resolveUser(payload.sub, payload.organization_id, 'service');
      if (payload.token_use === TokenUse.ACCESS) {
        // The partner's current standing, not the token's: a disabled partner stops at once
        // (within the cache TTL), not when its last access token expires.
        const partnerId = payload.sub;
        return cached(`partner|${partnerId}`, async () => {
          const partner = await findActivePartner(db, partnerId);
          if (!partner) throw unauthorised('unknown or disabled partner');
          return {
            scheme: 'partner',
            id: `partner:${partnerId}`,
            partnerId,
            organizationId: partner.organization_id,
            grants: partner.permissions.map(parseGrant).filter((g): g is Grant => g !== undefined),
          };
        });
      }
      throw unauthorised('unknown token use');
    },
  });
  if (config.AUTH_JWKS_URL && config.AUTH_ISSUER) {
    register(config.AUTH_ISSUER, {
      key: remoteJwks(config.AUTH_JWKS_URL),
      audience: config.AUTH_AUDIENCE,
      resolve: (payload) => resolveUser(payload.sub, payload.organization_id, 'identity_provider'),
    });
  }
  for (const issuer of config.FINANCING_ISSUERS) {
    register(issuer.issuer, {
      key: remoteJwks(issuer.jwks_url),
      audience: issuer.audience ?? config.FINANCING_AUDIENCE,
      async resolve(payload): Promise<FinancingCaller> {
        return {
          scheme: 'financing',
          id: `financing:${issuer.issuer}:${payload.sub}`,
          issuer: issuer.issuer,
          subject: payload.sub,
          organizationId: typeof payload.organization_id === 'string' ? payload.organization_id : null,
          grants: financingGrants(payload.permissions),
        };
      },
    });
  }
  return verifiers;
}

/**
 * Turns an Authorization header into a Caller, or refuses it with UNAUTHORISED. Which verifier
 * applies is chosen by the token's issuer (or the API key prefix), and that verifier then
 * checks everything strictly: RS256 only, its own key set, issuer, audience, exp/iat/sub present,
 * nbf and iat not in the future beyond a small clock tolerance. Resolving the caller (user and
 * roles, API key) and a verified token's outcome are cached for AUTH_CALLER_CACHE_TTL at most.
 */
export function createAuthenticator(deps: AuthenticatorDeps) {
  const { config, db } = deps;
  const cache = new LRUCache<string, Caller>({ max: 50_000, ttl: config.AUTH_CALLER_CACHE_TTL });
  const cached = async (key: string, load: () => Promise<Caller>): Promise<Caller> => {
    const hit = cache.get(key);
    if (hit) return hit;
    const caller = await load();
    cache.set(key, caller);
    return caller;
  };

  /** Backend users: by our uuid or the identity provider's auth id, in the organization claimed or their own. */
  async function resolveUser(
    subject: string,
    claimedOrganization: unknown,
    via: UserCaller['via'],
  ): Promise<UserCaller> {
    const organizationClaim =
      typeof claimedOrganization === 'string' && claimedOrganization ? claimedOrganization : undefined;
    return cached(`user|${via}|${subject}|${organizationClaim ?? ''}`, async () => {
      // Our own tokens carry our user id. The identity provider's carry its auth id, or our id
      // for users it knows by it; an auth id may itself look like a uuid, so it is tried first.
      const byId = () => findUserById(db, subject);
      const user =
        via === 'service'
          ? await byId()
          : ((await findUserByAuthId(db, subject)) ?? (isUuid(subject) ? await byId() : undefined));
      if (!user || user.status === 'DISABLED') throw unauthorised('unknown subject');
      const organizationId = organizationClaim ?? user.organization_id;
      const roles = await userRoles(db, organizationId, user.id);
      if (roles.length === 0) {
        throw new ServiceError(ErrorCode.FORBIDDEN, 'No access to this organization');
      }
      return {
        scheme: 'user',
        id: `user:${user.id}`,
        userId: user.id,
        organizationId,
        status: user.status,
        via,
        grants: grantsOfRoles(roles),
      };
    }) as Promise<UserCaller>;
  }

  const verifiers = issuerVerifiers(deps, resolveUser, cached);

  /**
   * Tokens already verified, until they expire or AUTH_CALLER_CACHE_TTL passes, whichever is
   * first: the exact token bytes passed every check, and an RS256 verification costs about
   * 100 µs of CPU that would otherwise be spent again on every request a client makes with it.
   */
  const verified = new LRUCache<string, Caller>({ max: 20_000 });

  async function authenticateJwt(token: string): Promise<Caller> {
    const hit = verified.get(token);
    if (hit) return hit;
    let issuer: unknown;
    try {
      const header = decodeProtectedHeader(token);
      if (KEY_CARRYING_HEADERS.some((name) => name in header)) throw unauthorised('key-carrying header');
      if (header.alg !== 'RS256') throw unauthorised('algorithm');
      issuer = decodeJwt(token).iss;
    } catch (error) {
      if (error instanceof ServiceError) throw error;
      throw unauthorised('malformed token');
    }
    const verifier = typeof issuer === 'string' ? verifiers.get(issuer) : undefined;
    if (!verifier) throw unauthorised('unknown issuer');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, verifier.key, {
        algorithms: ['RS256'],
        issuer: issuer as string,
        audience: verifier.audience,
        requiredClaims: ['exp', 'iat', 'sub'],
        clockTolerance: Math.round(config.AUTH_CLOCK_TOLERANCE / 1000),
      }));
    } catch (error) {
      deps.logger.debug({ reason: (error as { code?: string }).code }, 'token refused');
      throw unauthorised('verification failed');
    }
    const now = Date.now() / 1000;
    if (typeof payload.iat !== 'number' || payload.iat > now + config.AUTH_CLOCK_TOLERANCE / 1000)
      throw unauthorised('iat in the future');
    // Verified claims still reach queries (users, access, merchants): only text Postgres can take.
    if (!isClaimText(payload.sub)) throw unauthorised('sub');
    const organizationClaim = payload.organization_id;
    if (
      organizationClaim !== undefined &&
      organizationClaim !== null &&
      organizationClaim !== '' &&
      !isClaimText(organizationClaim)
    )
      throw unauthorised('organization_id');
    const caller = await verifier.resolve(payload as JWTPayload & { sub: string });
    const lifetime = Math.min(config.AUTH_CALLER_CACHE_TTL, (payload.exp! - now) * 1000);
    if (lifetime > 0) verified.set(token, caller, { ttl: lifetime });
    return caller;
  }

  async function authenticateApiKey(key: string): Promise<Caller> {
    const hash = hashSecret(key);
    return cached(`key|${hash}`, async () => {
      const record = await findApiKey(db, key);
      if (!record) throw unauthorised('unknown API key');
      return {
        scheme: 'api_key',
        id: `api_key:${record.id}`,
        keyId: record.id,
        platform: record.platform,
        organizationId: record.organizationId,
        grants: record.grants,
      };
    });
  }

  return {
    /** The caller behind an Authorization header value; throws UNAUTHORISED (or FORBIDDEN). */
    async authenticate(authorization: string | undefined): Promise<Caller> {
      const token = bearerToken(authorization, config.AUTH_MAX_HEADER_BYTES);
      return token.startsWith(API_KEY_PREFIX) ? authenticateApiKey(token) : authenticateJwt(token);
    },
    /**
     * Whether this exact credential verified recently (it is cached): it passes a failed-
     * authentication lockout, so guessing against a user cannot lock out her working session.
     */
    recognises(authorization: string | undefined): boolean {
      const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
      if (!token) return false;
      return token.startsWith(API_KEY_PREFIX) ? cache.has(`key|${hashSecret(token)}`) : verified.has(token);
    },
    /** Issuers that authenticate callers directly: a partner may never be registered with one. */
    isTrustedIssuer: (issuer: string) => verifiers.has(issuer),
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

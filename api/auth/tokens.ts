import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, type JWTVerifyGetKey, jwtVerify, SignJWT } from 'jose';
import type { Knex } from 'knex';
import type { Config } from '../../config';
import { activePartners, type PartnerRow } from '../../db/auth/partners';
import { insertRefreshToken, type RefreshSession, spendRefreshToken } from '../../db/auth/refresh-tokens';
import type { Clock } from '../../domain/clock';
import { type Grant, parseGrant } from '../../domain/rbac';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { TokenUse, unauthorised } from './authenticator';
import type { UserCaller } from './caller';
import { hashSecret, openWith, randomSecret, sealWith } from './secrets';
import type { ServiceKeys } from './service-keys';

/** The answer of /v1/auth/exchange (the spec leaves it open; OAuth 2.0's token response shape). */
export interface AccessTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}
/** The answer of /v1/auth/refresh (spec 2, Token refresh), also of /v1/auth/sessions. */
export interface SessionTokens {
  id_token: string;
  refresh_token: string;
  expires_in: number;
}

/** The label of the key a spent refresh token's answer is sealed with (api/auth/secrets.ts). */
const ANSWER_SEAL = 'refresh-token-answer-v1';

/** A refresh token that does not refresh: 400 BAD_REQUEST, the reason kept for debug logs only. */
const refreshRefused = (reason: string) =>
  Object.assign(
    new ServiceError(
      ErrorCode.BAD_REQUEST,
      'The refresh token is unknown, expired, already used or revoked: sign in again',
    ),
    { reason },
  );

/**
 * Tokens this service issues: partner access tokens (exchange), and user sessions made of a
 * one-hour ID token and an opaque refresh token. Refresh tokens are single-use: each refresh
 * spends one and returns its successor in the same family. Presenting a spent one is taken as
 * theft and revokes the whole family, except the one case of a lost answer: the same token again
 * within REFRESH_TOKEN_REUSE_LEEWAY while its successor is unused gets the same answer.
 */
export function createTokenService(deps: {
  config: Pick<
    Config,
    | 'AUTH_CALLER_CACHE_TTL'
    | 'AUTH_CLOCK_TOLERANCE'
    | 'AUTH_JWKS_CACHE_MAX_AGE'
    | 'AUTH_JWKS_COOLDOWN'
    | 'PARTNER_EXCHANGE_AUDIENCE'
    | 'REFRESH_TOKEN_REUSE_LEEWAY'
    | 'REFRESH_TOKEN_TTL'
    | 'SERVICE_TOKEN_AUDIENCE'
    | 'SERVICE_TOKEN_ISSUER'
    | 'SERVICE_TOKEN_TTL'
  >;
  db: Knex;
  clock: Clock;
  serviceKeys: ServiceKeys;
  /** Issuers that authenticate callers directly (the service, identity provider, financing). */
  isTrustedIssuer: (issuer: string) => boolean;
}) {
  const { config, db, clock, serviceKeys } = deps;
  const ttlSeconds = Math.round(config.SERVICE_TOKEN_TTL / 1000);
  const partnerKeys = new Map<string, JWTVerifyGetKey>();

  async function sign(subject: string, claims: Record<string, unknown>): Promise<string> {
    const now = Math.floor(clock.now().getTime() / 1000);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: serviceKeys.kid, typ: 'JWT' })
      .setIssuer(config.SERVICE_TOKEN_ISSUER)
      .setAudience(config.SERVICE_TOKEN_AUDIENCE)
      .setSubject(subject)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .setJti(randomUUID())
      .sign(serviceKeys.privateKey);
  }

  function partnerKey(partner: PartnerRow): JWTVerifyGetKey {
    const cacheKey = `${partner.id}|${partner.jwks_url ?? JSON.stringify(partner.public_jwk)}`;
    let key = partnerKeys.get(cacheKey);
    if (!key) {
      key = partner.jwks_url
        ? createRemoteJWKSet(new URL(partner.jwks_url), {
            cacheMaxAge: config.AUTH_JWKS_CACHE_MAX_AGE,
            cooldownDuration: config.AUTH_JWKS_COOLDOWN,
          })
        : createLocalJWKSet({ keys: [partner.public_jwk!] });
      partnerKeys.set(cacheKey, key);
    }
    return key;
  }

  /**
   * Active partners by issuer. The issuer of a token not yet verified is only ever looked up
   * here, never in a query: the table (a few rows) is read whole, kept AUTH_CALLER_CACHE_TTL, and
   * read again on a miss at most once a second, so a new partner is known at once.
   */
  let partners: { byIssuer: Map<string, PartnerRow>; readAt: number } | undefined;
  async function activePartner(issuer: string): Promise<PartnerRow | undefined> {
    const age = partners ? Date.now() - partners.readAt : Infinity;
    if (age > config.AUTH_CALLER_CACHE_TTL || (age > 1_000 && !partners?.byIssuer.has(issuer))) {
      const rows = await activePartners(db);
      partners = { byIssuer: new Map(rows.map((row) => [row.issuer, row])), readAt: Date.now() };
    }
    return partners?.byIssuer.get(issuer);
  }

  async function newRefreshToken(trx: Knex, user: RefreshSession, familyId: string, id: string = randomUUID()) {
    const refreshToken = randomSecret();
    await insertRefreshToken(trx, user.organizationId, {
      id,
      family_id: familyId,
      user_id: user.userId,
      token_hash: hashSecret(refreshToken),
      created_at: clock.now(),
      expires_at: new Date(clock.now().getTime() + config.REFRESH_TOKEN_TTL),
    });
    return refreshToken;
  }

  const idToken = (user: { userId: string; organizationId: string }) =>
    sign(user.userId, { organization_id: user.organizationId, token_use: TokenUse.ID });

  return {
    /** A trusted partner's signed JWT (bearer of /v1/auth/exchange) for a service access token. */
    async exchangePartnerToken(assertion: string): Promise<AccessTokenResponse> {
      let issuer: unknown;
      try {
        issuer = decodeJwt(assertion).iss;
      } catch {
        throw unauthorised('malformed partner token');
      }
      if (typeof issuer !== 'string') throw unauthorised('partner token without issuer');
      // A partner registered under a caller-facing issuer would turn any of its tokens into
      // partner access; such a registration is never honoured.
      if (deps.isTrustedIssuer(issuer)) throw unauthorised('partner issuer collides with a trusted issuer');
      const partner = await activePartner(issuer);
      if (!partner) throw unauthorised('unknown partner');
      try {
        await jwtVerify(assertion, partnerKey(partner), {
          algorithms: ['RS256'],
          issuer,
          audience: config.PARTNER_EXCHANGE_AUDIENCE,
          requiredClaims: ['exp', 'iat', 'sub'],
          clockTolerance: Math.round(config.AUTH_CLOCK_TOLERANCE / 1000),
        });
      } catch {
        throw unauthorised('partner token refused');
      }
      const grants = partner.permissions.map(parseGrant).filter((g): g is Grant => g !== undefined);
      return {
        access_token: await sign(partner.id, {
          organization_id: partner.organization_id,
          token_use: TokenUse.ACCESS,
          permissions: grants.map((g) => `${g.permission}:${g.scope}`),
        }),
        token_type: 'Bearer',
        expires_in: ttlSeconds,
      };
    },

    /** Signs a user in: a new refresh-token family and a first ID token. */
    async startSession(user: UserCaller): Promise<SessionTokens> {
      const refreshToken = await newRefreshToken(db, user, randomUUID());
      return { id_token: await idToken(user), refresh_token: refreshToken, expires_in: ttlSeconds };
    },

    /**
     * Spends a refresh token for a new ID token and its successor; reuse revokes the family, but
     * the same token again within the leeway, its successor unused, answers that same pair. A
     * token that does not refresh is 400 BAD_REQUEST (spec 4.1: "Error: body with code
     * BAD_REQUEST"), never 401: a client told to refresh on 401 (spec 5.8) would refresh again.
     */
    async refresh(presented: string): Promise<SessionTokens> {
      const outcome = await spendRefreshToken(
        db,
        hashSecret(presented),
        clock,
        config.REFRESH_TOKEN_REUSE_LEEWAY,
        async (trx, session, familyId) => {
          const successorId = randomUUID();
          const answer: SessionTokens = {
            id_token: await idToken(session),
            refresh_token: await newRefreshToken(trx, session, familyId, successorId),
            expires_in: ttlSeconds,
          };
          const sealed = { ...answer, expires_at: Math.floor(clock.now().getTime() / 1000) + ttlSeconds };
          return { successorId, sealedAnswer: sealWith(presented, ANSWER_SEAL, JSON.stringify(sealed)), answer };
        },
      );
      // A reuse's revocation must commit, so the refusal is thrown only after the transaction.
      if (!outcome.ok) throw refreshRefused(outcome.reason);
      if ('issued' in outcome) return outcome.issued;
      const opened = openWith(presented, ANSWER_SEAL, outcome.sealedAnswer);
      if (!opened) throw refreshRefused('sealed answer does not open');
      const { expires_at: expiresAt, ...answer } = JSON.parse(opened) as SessionTokens & { expires_at: number };
      return { ...answer, expires_in: Math.max(0, expiresAt - Math.floor(clock.now().getTime() / 1000)) };
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;

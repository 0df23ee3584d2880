import { z } from 'zod';
import { byteSize, duration, optionalUrl } from './fields';

/** The financing bearer scheme's trusted issuers, given as one JSON array. */
const financingIssuers = z
  .string()
  .default('[]')
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'expected a JSON array of financing issuers' });
      return z.NEVER;
    }
  })
  .pipe(
    z.array(
      z.strictObject({
        issuer: z.string().min(1),
        jwks_url: z.url(),
        audience: z.string().min(1).optional(),
        /** Where merchant-scoped permissions are checked: our database, or an HTTP resource-access service. */
        resource_access: z.union([z.literal('database'), z.strictObject({ url: z.url() })]),
      }),
    ),
  );
export type FinancingIssuer = z.output<typeof financingIssuers>[number];

/** Authentication: the backend bearer scheme, the financing scheme, and the tokens this service issues. */
export const authSettings = {
  /** Backend bearer scheme: the identity provider's JWKS, issuer and the audience of our API. */
  AUTH_JWKS_URL: optionalUrl,
  AUTH_ISSUER: z.string().min(1).optional(),
  AUTH_AUDIENCE: z.string().min(1).default('lending-service'),
  AUTH_CLOCK_TOLERANCE: duration('30s'),
  /** Larger Authorization headers are refused before any parsing. */
  AUTH_MAX_HEADER_BYTES: byteSize('8kb'),
  AUTH_JWKS_CACHE_MAX_AGE: duration('10m'),
  /** After a fetch, an unknown kid triggers another JWKS fetch only after this long. */
  AUTH_JWKS_COOLDOWN: duration('30s'),
  /** Resolved callers (user, roles, API key) are cached this long: revocations take effect within it. */
  AUTH_CALLER_CACHE_TTL: duration('30s'),
  /** Financing bearer scheme: the trusted issuers, as JSON. */
  FINANCING_ISSUERS: financingIssuers,
  FINANCING_AUDIENCE: z.string().min(1).default('lending-service'),

  /** Tokens this service issues (partner exchange, sessions and refresh). */
  SERVICE_TOKEN_ISSUER: z.string().min(1).default('lending-service'),
  SERVICE_TOKEN_AUDIENCE: z.string().min(1).default('lending-service'),
  SERVICE_TOKEN_TTL: duration('1h'),
  /**
   * The `aud` a partner's JWT must carry at /v1/auth/exchange: distinct from every other
   * audience, so no token minted for another purpose can be exchanged.
   */
  PARTNER_EXCHANGE_AUDIENCE: z.string().min(1).default('lending-service:exchange'),
  REFRESH_TOKEN_TTL: duration('30d'),
  /**
   * A spent refresh token sent again this soon after it was spent, while the token it was rotated
   * to is unused, answers that same pair (its first answer was lost on the way back); any other
   * reuse revokes every token of the session.
   */
  REFRESH_TOKEN_REUSE_LEEWAY: duration('30s'),
  /** The service's private RS256 signing key as a JWK (JSON, with kid). Generated for npm start and tests. */
  SERVICE_SIGNING_KEY: z.string().min(1).optional(),
};

import { z } from 'zod';
import { ErrorCode, ServiceError } from '../../domain/errors';
import { formatGrant } from '../../domain/rbac';
import { bearerToken } from './authenticator';
import type { Caller } from './caller';
import type { TokenService } from './tokens';
import type { Needs } from '../deps';
import { type AnyRoute, defineRoute } from '../route';

const AccessToken = z
  .object({
    access_token: z.string().meta({ description: 'RS256 JWT signed by this service; send it as the bearer token.' }),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().meta({ example: 3600 }),
  })
  .meta({
    id: 'AccessToken',
    description: 'Service access token for a trusted partner (OAuth 2.0 token response shape).',
  });

const SessionTokens = z
  .object({
    id_token: z.string().meta({ description: 'RS256 JWT signed by this service, valid for expires_in seconds.' }),
    refresh_token: z.string().meta({ description: 'Opaque and single-use: every refresh returns its successor.' }),
    expires_in: z.number().int().meta({ example: 3600 }),
  })
  .meta({ id: 'SessionTokens' });

const RefreshRequest = z.strictObject({ refresh_token: z.string().min(1).max(512) }).meta({ id: 'RefreshRequest' });

const CallerView = z
  .object({
    scheme: z.enum(['user', 'partner', 'api_key', 'financing']),
    organization_id: z.string().nullable(),
    user_id: z.string().optional(),
    status: z.string().optional(),
    partner_id: z.string().optional(),
    api_key_id: z.string().optional(),
    issuer: z.string().optional(),
    subject: z.string().optional(),
    permissions: z.array(z.string()).meta({ description: 'Grants as permission:SCOPE (ORG or PLATFORM).' }),
  })
  .meta({ id: 'Caller' });

function viewOf(caller: Caller): z.infer<typeof CallerView> {
  const base = {
    scheme: caller.scheme,
    organization_id: caller.organizationId,
    permissions: caller.grants.map(formatGrant),
  };
  switch (caller.scheme) {
    case 'user':
      return { ...base, user_id: caller.userId, status: caller.status };
    case 'partner':
      return { ...base, partner_id: caller.partnerId };
    case 'api_key':
      return { ...base, api_key_id: caller.keyId };
    case 'financing':
      return { ...base, issuer: caller.issuer, subject: caller.subject };
  }
}

/** Spec 4.1 (token exchange and refresh), the sign-in the spec leaves out, and our JWKS. */
export function authRoutes(deps: Needs<'serviceKeys', 'AUTH_MAX_HEADER_BYTES'>, tokens: TokenService): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/auth/exchange',
      operationId: 'exchangePartnerToken',
      summary: 'Exchange a trusted partner JWT for a service access token',
      description:
        'The partner sends its own RS256 JWT (iss = its registered issuer, aud = PARTNER_EXCHANGE_AUDIENCE, exp, iat, sub) ' +
        "as the bearer token and the body {}. The answer is a service access token for the partner's organization.",
      tags: ['auth'],
      documentedSecurity: 'partnerJwt',
      request: { body: z.strictObject({}).optional().meta({ description: 'The empty object {} (or no body).' }) },
      responses: { 200: { description: 'Service access token', schema: AccessToken } },
      errors: {
        UNAUTHORISED:
          'the partner JWT is missing, malformed, expired, not signed by a registered active partner, or for another audience',
      },
      async handler(ctx) {
        ctx.body = await tokens.exchangePartnerToken(
          bearerToken(ctx.get('Authorization') || undefined, deps.config.AUTH_MAX_HEADER_BYTES),
        );
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/refresh',
      operationId: 'refreshSession',
      summary: 'Refresh a session: a new ID token and the next refresh token',
      description:
        'No bearer token. The refresh token is single-use: replace both stored tokens with the answer. Every refusal ' +
        'is 400 BAD_REQUEST (never 401, which tells a client to refresh). Presenting a used one revokes every token of ' +
        'its session, except the same token sent again within REFRESH_TOKEN_REUSE_LEEWAY (30 s) of its use while the ' +
        'token it was rotated to is unused (its answer was lost): that gets the same pair again.',
      tags: ['auth'],
      request: { body: RefreshRequest },
      responses: { 200: { description: 'New tokens', schema: SessionTokens } },
      errors: {
        BAD_REQUEST: 'a malformed body, or an unknown, expired, already used or revoked refresh token (sign in again)',
      },
      async handler(ctx, { body }) {
        ctx.body = await tokens.refresh(body.refresh_token);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/sessions',
      operationId: 'startSession',
      summary: 'Sign in: exchange an identity-provider token for a session (ID token and refresh token)',
      description:
        "The spec does not show sign-in. Send the identity provider's JWT as the bearer token; body {} or none.",
      tags: ['auth'],
      extension: true,
      auth: { schemes: ['user'] },
      responses: { 201: { description: 'A new session', schema: SessionTokens } },
      errors: { UNAUTHORISED: "a token this service issued: only the identity provider's tokens sign in" },
      async handler(ctx) {
        const caller = ctx.state.caller as Caller;
        // Only the identity provider signs users in; a session token cannot mint more sessions.
        if (caller.scheme !== 'user' || caller.via !== 'identity_provider')
          throw new ServiceError(ErrorCode.UNAUTHORISED);
        ctx.status = 201;
        ctx.body = await tokens.startSession(caller);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/auth/whoami',
      operationId: 'getCaller',
      summary: 'The caller behind the presented credentials, as the service resolved it',
      tags: ['auth'],
      extension: true,
      auth: { schemes: ['user', 'partner', 'api_key', 'financing'] },
      responses: { 200: { description: 'The caller', schema: CallerView } },
      handler(ctx) {
        ctx.body = viewOf(ctx.state.caller as Caller);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/jwks.json',
      operationId: 'getServiceJwks',
      summary: 'Public keys of the tokens this service issues',
      tags: ['auth'],
      extension: true,
      rateLimit: false,
      responses: {
        200: {
          description: 'JSON Web Key Set (RFC 7517)',
          schema: z.strictObject({ keys: z.array(z.looseObject({ kty: z.string(), kid: z.string().optional() })) }),
        },
      },
      handler(ctx) {
        ctx.set('Cache-Control', 'public, max-age=300');
        ctx.body = deps.serviceKeys.jwks;
      },
    }),
  ];
}

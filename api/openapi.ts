import {
  OpenApiGeneratorV31,
  OpenAPIRegistry,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorResponsesOf } from './openapi-errors';
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_MAX_LENGTH, REPLAYED_HEADER } from './middleware/idempotency';
import type { AuthScheme } from './auth/caller';
import type { AnyRoute } from './route';

function responsesOf(route: AnyRoute): Record<string, ResponseConfig> {
  const out: Record<string, ResponseConfig> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    out[status] = response.schema
      ? {
          description: response.description,
          content: { [response.mediaType ?? 'application/json']: { schema: response.schema } },
        }
      : response.mediaType
        ? { description: response.description, content: { [response.mediaType]: { schema: { type: 'string' } } } }
        : { description: response.description };
    if (response.headers)
      out[status].headers = Object.fromEntries(
        Object.entries(response.headers).map(([name, header]) => [
          name,
          { description: header.description, schema: { type: 'string' } },
        ]),
      );
  }
  for (const [status, response] of Object.entries(out)) {
    if (!/^2\d\d$/.test(status) || '$ref' in response) continue;
    if (route.idempotent) {
      response.headers = {
        ...response.headers,
        [REPLAYED_HEADER]: {
          description: '`true` when this answer is the stored one of an earlier request with the same Idempotency-Key.',
          schema: { type: 'string', enum: ['true'] },
        },
      };
    }
  }
  // A success status of the route's own (readiness's 503) keeps its description and schema.
  const errors = errorResponsesOf(route);
  for (const [status, response] of Object.entries(errors)) out[status] ??= response;
  return out;
}

const SECURITY_SCHEMES: Record<AuthScheme | 'partnerJwt', { name: string; description: string }> = {
  user: {
    name: 'backendBearer',
    description:
      'Backend bearer scheme (spec 5.4): an RS256 JWT from the identity provider, or an ID token from /v1/auth/sessions or /v1/auth/refresh.',
  },
  partner: { name: 'partnerAccessToken', description: 'A service access token from /v1/auth/exchange.' },
  api_key: {
    name: 'apiKey',
    description: 'An API key (spec 5.6), sent as `Authorization: Bearer lsk_...`; organization-scoped or platform.',
  },
  financing: {
    name: 'financingBearer',
    description: 'Financing bearer scheme (spec 5.5): an RS256 JWT from a trusted financing issuer.',
  },
  partnerJwt: {
    name: 'partnerJwt',
    description:
      "A trusted partner's own RS256 JWT (iss: its registered issuer, aud: PARTNER_EXCHANGE_AUDIENCE), presented only to /v1/auth/exchange.",
  },
};

const IDEMPOTENCY_NOTE =
  'Honours `Idempotency-Key`: the first request with a key executes and its answer is stored for ' +
  'IDEMPOTENCY_KEY_TTL whatever its status (a 2xx, or a refusal the execution reached: 400, 404, 409); retries ' +
  `with the same key and the same request replay it byte for byte with \`${REPLAYED_HEADER}: true\`. Keys are ` +
  'scoped to the caller and the operation. What never executed is not stored and may be retried with the same ' +
  'key: validation failures, 401 and 403, 429, 503, 500, and a request whose key is still running (409).';

const IDEMPOTENCY_KEY = z
  .string()
  .min(1)
  .max(IDEMPOTENCY_KEY_MAX_LENGTH)
  .optional()
  .meta({
    description:
      'Optional. Makes retries safe: the same key with the same request replays the stored answer; with a ' +
      'different request it is 409 IDEMPOTENCY_KEY_REUSED. The same request while the first is still running waits ' +
      'for its answer and replays it; only past IDEMPOTENCY_WAIT (10 s) is it 409 IDEMPOTENCY_REQUEST_IN_PROGRESS ' +
      'with Retry-After: resend the same request. An empty or longer key is 400.',
  });

/** The request headers of an idempotent route with Idempotency-Key, unless its own schema names it. */
function headersOf(route: AnyRoute): NonNullable<RouteConfig['request']>['headers'] {
  const declared = route.request?.headers;
  if (!route.idempotent) return declared;
  if (!declared) return z.object({ [IDEMPOTENCY_HEADER]: IDEMPOTENCY_KEY });
  if (!(declared instanceof z.ZodObject) || IDEMPOTENCY_HEADER in declared.shape) return declared;
  return declared.extend({ [IDEMPOTENCY_HEADER]: IDEMPOTENCY_KEY });
}

/** The OpenAPI 3.1 document of every route, built from the routes' own schemas. */
export function buildOpenApiDocument(routes: readonly AnyRoute[], serverUrl?: string) {
  const registry = new OpenAPIRegistry();
  for (const scheme of Object.values(SECURITY_SCHEMES)) {
    registry.registerComponent('securitySchemes', scheme.name, {
      type: 'http',
      scheme: 'bearer',
      description: scheme.description,
    });
  }
  for (const route of routes) {
    const request: RouteConfig['request'] = {};
    if (route.request?.params) request.params = route.request.params;
    if (route.request?.query) request.query = route.request.query;
    const headers = headersOf(route);
    if (headers) request.headers = headers;
    if (route.request?.body) {
      const mediaType = route.bodyFormat === 'form' ? 'application/x-www-form-urlencoded' : 'application/json';
      request.body = { content: { [mediaType]: { schema: route.request.body } } };
    }
    registry.registerPath({
      method: route.method,
      path: route.path,
      operationId: route.operationId,
      summary: route.summary,
      description: route.idempotent
        ? [route.description, IDEMPOTENCY_NOTE].filter(Boolean).join('\n\n')
        : route.description,
      tags: route.tags,
      deprecated: route.deprecated,
      ...(route.extension ? { 'x-extension': true } : {}),
      ...(route.auth
        ? { security: route.auth.schemes.map((scheme) => ({ [SECURITY_SCHEMES[scheme].name]: [] })) }
        : {}),
      ...(route.documentedSecurity ? { security: [{ [SECURITY_SCHEMES[route.documentedSecurity].name]: [] }] } : {}),
      request,
      responses: responsesOf(route),
    });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Lending, identity-verification and account service',
      version: '1.0.0',
      description:
        'Errors use two shapes (spec section 7): the KYC, financing and internal endpoints answer ' +
        '{code, description, identifier, invalid_params}; the rest answer {code, description}. ' +
        'Operations marked x-extension are not shown in the spec and are added by this service.',
    },
    servers: serverUrl ? [{ url: serverUrl }] : [],
  });
}

import {
  OpenApiGeneratorV31,
  OpenAPIRegistry,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { errorFamilyOf } from './errors';
import type { AuthScheme } from './auth/caller';
import type { AnyRoute } from './route';
import { PlainError, ValidationError } from './schemas/errors';

function responsesOf(route: AnyRoute): Record<string, ResponseConfig> {
  const out: Record<string, ResponseConfig> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    out[status] = response.schema
      ? { description: response.description, content: { [response.mediaType ?? 'application/json']: { schema: response.schema } } }
      : response.mediaType
        ? { description: response.description, content: { [response.mediaType]: { schema: { type: 'string' } } } }
        : { description: response.description };
  }
  const errorSchema = errorFamilyOf(route.path) === 'validation' ? ValidationError : PlainError;
  out.default = { description: 'Error (see the README for the status of every code)', content: { 'application/json': { schema: errorSchema } } };
  return out;
}

const SECURITY_SCHEMES: Record<AuthScheme, { name: string; description: string }> = {
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
  financing: { name: 'financingBearer', description: 'Financing bearer scheme (spec 5.5): an RS256 JWT from a trusted financing issuer.' },
};

/** The OpenAPI 3.1 document of every route, built from the routes' own schemas. */
export function buildOpenApiDocument(routes: readonly AnyRoute[], serverUrl?: string) {
  const registry = new OpenAPIRegistry();
  for (const scheme of Object.values(SECURITY_SCHEMES)) {
    registry.registerComponent('securitySchemes', scheme.name, { type: 'http', scheme: 'bearer', description: scheme.description });
  }
  for (const route of routes) {
    const request: RouteConfig['request'] = {};
    if (route.request?.params) request.params = route.request.params;
    if (route.request?.query) request.query = route.request.query;
    if (route.request?.headers) request.headers = route.request.headers;
    if (route.request?.body) {
      request.body = { content: { 'application/json': { schema: route.request.body } } };
    }
    registry.registerPath({
      method: route.method,
      path: route.path,
      operationId: route.operationId,
      summary: route.summary,
      description: route.description,
      tags: route.tags,
      deprecated: route.deprecated,
      ...(route.extension ? { 'x-extension': true } : {}),
      ...(route.auth ? { security: route.auth.schemes.map((scheme) => ({ [SECURITY_SCHEMES[scheme].name]: [] })) } : {}),
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

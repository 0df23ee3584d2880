import type { Context } from 'koa';
import type { z } from 'zod';
import type { RequestSchemas } from './validation';

import type { ErrorCode } from '../domain/errors';
import type { AuthScheme } from './auth/caller';

export type CallbackProvider = 'mobile_money' | 'kyc' | 'sms';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Who may call a route. Absent: the route is public (operations, token refresh, callbacks). */
export interface RouteAuth {
  /** Accepted credential schemes; a valid credential of another scheme gets 401. */
  schemes: AuthScheme[];
  /** Required RBAC permission, at ORG scope for the target organization or at PLATFORM scope. */
  permission?: string;
  /** The path parameter naming the target organization, when it is not the caller's own. */
  organizationParam?: string;
  /** Merchant-scoped permission (financing), checked through the issuer's resource-access provider. */
  merchant?: { param: string; permission: string };
  /** Users on the waiting list get WAITING_LIST (the endpoints whose error table lists it). */
  refuseWaitingList?: boolean;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;
export type RouteInput<R extends RequestSchemas> = {
  params: Out<R['params']>;
  query: Out<R['query']>;
  headers: Out<R['headers']>;
  body: Out<R['body']>;
};

export interface RouteResponse {
  description: string;
  /** JSON body schema; omitted for bodiless answers. */
  schema?: z.ZodType;
  /** Response headers the answer carries (the document lists them), by name. */
  headers?: Record<string, { description: string }>;
  /** Non-JSON answers (metrics, the reference page) name their media type instead; a JSON answer has a schema. */
  mediaType?: string;
}

/**
 * One endpoint, declared once: the router serves it and the OpenAPI document describes it from
 * the same schemas, so the two cannot drift.
 */
export interface Route<R extends RequestSchemas = RequestSchemas> {
  method: HttpMethod;
  /** OpenAPI path template, e.g. `/v1/kyc/applications/{id}/status`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  deprecated?: boolean;
  /**
   * Deprecation details (api/middleware/deprecation.ts): the successor's path template for the
   * `Link` of a deprecated operation, or `when`, for an operation that is not deprecated but one
   * of whose channels is: true for a request body using the deprecated channel.
   */
  deprecation?: { successor?: string; when?: (body: unknown) => boolean };
  /** An operation the spec does not show that this service adds; marked `x-extension` in the document. */
  extension?: boolean;
  auth?: RouteAuth;
  /** Operations endpoints (health, metrics, documents) are not rate limited. */
  rateLimit?: false;
  /**
   * A provider's callback: its own rate limit per source address (not the caller budgets), its
   * own small body limit, and, when the provider's source addresses are configured, only those.
   */
  callback?: {
    provider: CallbackProvider;
    sources: readonly string[];
    /** Its body limit when the provider's callbacks are larger than CALLBACK_BODY_LIMIT. */
    bodyLimit?: number;
  };
  /** The body is form-encoded (application/x-www-form-urlencoded), as the SMS gateway's delivery reports are; JSON otherwise. */
  bodyFormat?: 'form';
  /** Verification routes carry base64 images and get the larger body limit. */
  bodyLimit?: 'default' | 'verification';
  /**
   * The route honours Idempotency-Key (spec 4.3): the first request with a key executes and its
   * 2xx answer is stored; identical retries replay it byte for byte. Needs `auth` (keys are
   * scoped to the caller) and a JSON answer. See api/middleware/idempotency.ts.
   */
  idempotent?: true;
  request?: R;
  responses: Record<number, RouteResponse>;
  /**
   * The errors the handler itself raises, each with when (the OpenAPI document adds the ones
   * the route's declaration implies: validation, authentication, rate limits, bodies...).
   */
  errors?: Partial<Record<ErrorCode, string>>;
  /** Security schemes of a route that verifies its own credential (the partner exchange), for the document. */
  documentedSecurity?: 'partnerJwt';
  handler: (ctx: Context, input: RouteInput<R>) => Promise<void> | void;
}

// A list of routes holds routes with different request schemas.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = Route<any>;

export function defineRoute<R extends RequestSchemas>(route: Route<R>): Route<R> {
  return route;
}

/** `/v1/kyc/applications/{id}` → `/v1/kyc/applications/:id` for the router. */
export function routerPath(openApiPath: string): string {
  return openApiPath.replace(/\{([^}]+)\}/g, ':$1');
}

/**
 * A deprecated alias over the same engine: another path (and perhaps another request shape,
 * mapped onto the original's input); the deprecation middleware announces it and its successor.
 */
export function deprecatedAlias<R extends RequestSchemas, A extends RequestSchemas>(
  successor: Route<R>,
  alias: {
    path: string;
    operationId: string;
    summary: string;
    request?: A;
    /** The alias's own answers when it serves only some of the successor's (one success status each). */
    responses?: Record<number, RouteResponse>;
    toSuccessorInput?: (input: RouteInput<A>) => RouteInput<R>;
    /** Set on ctx.state before the successor runs: what the successor is told of the alias it serves. */
    state?: Record<string, unknown>;
  },
): Route<A> {
  return {
    ...(successor as unknown as Route<A>),
    path: alias.path,
    operationId: alias.operationId,
    summary: alias.summary,
    description: `Deprecated alias of ${successor.method.toUpperCase()} ${successor.path}.`,
    deprecated: true,
    deprecation: { successor: successor.path },
    request: alias.request ?? (successor.request as unknown as A),
    responses: alias.responses ?? successor.responses,
    async handler(ctx, input) {
      const mapped = alias.toSuccessorInput ? alias.toSuccessorInput(input) : (input as unknown as RouteInput<R>);
      Object.assign(ctx.state, alias.state);
      await successor.handler(ctx, mapped);
    },
  };
}

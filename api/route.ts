import type { Context } from 'koa';
import type { z } from 'zod';
import type { RequestSchemas } from './validation';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

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
  /** Non-JSON answers (metrics, the reference page) name their media type instead. */
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
  /** An operation the spec does not show that this service adds; marked `x-extension` in the document. */
  extension?: boolean;
  /** Verification routes carry base64 images and get the larger body limit. */
  bodyLimit?: 'default' | 'verification';
  request?: R;
  responses: Record<number, RouteResponse>;
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

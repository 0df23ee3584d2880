import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ping } from '../../db/knex';
import { ErrorCode, ServiceError } from '../../domain/errors';
import type { Needs } from '../deps';
import type { HttpMetrics } from '../metrics';
import { type AnyRoute, defineRoute } from '../route';

const Health = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });
const Readiness = z
  .object({
    status: z.enum(['ready', 'unavailable']),
    checks: z.record(z.string(), z.string()).meta({ description: 'Each dependency and "ok" or why it failed.' }),
  })
  .meta({ id: 'Readiness' });

/** Runs a readiness probe with a deadline; the answer is "ok" or why it failed. */
async function probe(check: () => Promise<unknown>, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'ok';
  } catch (error) {
    return `unreachable: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reference-page assets are served from the swagger-ui-dist package, never from a CDN. Its
 * folder is resolved without importing the package, whose entry point loads the 1 MB bundle.
 */
const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const DOCS_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};
const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Lending service API reference</title>
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });</script>
</body>
</html>`;

export function systemRoutes(
  deps: Needs<'db' | 'temporal', 'READINESS_TIMEOUT'>,
  metrics: HttpMetrics,
  openApiDocument: () => unknown,
): AnyRoute[] {
  const { db, temporal, config } = deps;
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'getHealth',
      summary: 'Liveness: the process is up',
      tags: ['operations'],
      extension: true,
      rateLimit: false,
      responses: { 200: { description: 'Alive', schema: Health } },
      handler(ctx) {
        ctx.body = { status: 'ok' };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Readiness: Postgres and Temporal answer',
      tags: ['operations'],
      extension: true,
      rateLimit: false,
      responses: {
        200: { description: 'Ready', schema: Readiness },
        503: { description: 'A dependency does not answer; checks names it', schema: Readiness },
      },
      async handler(ctx) {
        const deadline = config.READINESS_TIMEOUT;
        const [postgres, temporalCheck] = await Promise.all([
          probe(() => ping(db), deadline),
          probe(
            () =>
              temporal.connection.withDeadline(Date.now() + deadline, () =>
                temporal.connection.workflowService.getSystemInfo({}),
              ),
            deadline,
          ),
        ]);
        const ready = postgres === 'ok' && temporalCheck === 'ok';
        ctx.status = ready ? 200 : 503;
        ctx.body = { status: ready ? 'ready' : 'unavailable', checks: { postgres, temporal: temporalCheck } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/metrics',
      operationId: 'getMetrics',
      summary: 'Prometheus metrics of this API instance',
      tags: ['operations'],
      extension: true,
      rateLimit: false,
      responses: { 200: { description: 'Prometheus text format', mediaType: 'text/plain' } },
      async handler(ctx) {
        ctx.type = metrics.registry.contentType;
        ctx.body = await metrics.registry.metrics();
      },
    }),
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      tags: ['operations'],
      extension: true,
      rateLimit: false,
      responses: {
        200: {
          description: 'OpenAPI document',
          schema: z.looseObject({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }),
        },
      },
      handler(ctx) {
        ctx.body = openApiDocument();
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      operationId: 'getReferencePage',
      summary: 'Human-readable API reference',
      tags: ['operations'],
      extension: true,
      rateLimit: false,
      responses: { 200: { description: 'HTML page', mediaType: 'text/html' } },
      handler(ctx) {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = DOCS_PAGE;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs/assets/{asset}',
      operationId: 'getReferencePageAsset',
      summary: 'Assets of the reference page',
      tags: ['operations'],
      extension: true,
      rateLimit: false,
      request: { params: z.object({ asset: z.enum(Object.keys(DOCS_ASSETS) as [string, ...string[]]) }) },
      responses: { 200: { description: 'Asset', mediaType: 'application/octet-stream' } },
      async handler(ctx, { params }) {
        const type = DOCS_ASSETS[params.asset];
        if (!type) throw new ServiceError(ErrorCode.NOT_FOUND);
        ctx.type = type;
        ctx.set('Cache-Control', 'public, max-age=86400');
        ctx.body = await readFile(path.join(SWAGGER_UI_DIR, params.asset));
      },
    }),
  ];
}

import { z } from 'zod';
import { type AnyRoute, defineRoute } from '../../api/route';

/**
 * Test-only routes, mounted on the test API only, one per error family, so the foundation's
 * middleware, validation and error shapes are checked over real HTTP before the spec's own
 * routes exist. Under /v1/kyc the validation family answers; under /v1/accounts the plain one.
 */
const request = {
  params: z.object({ id: z.uuid() }),
  query: z.strictObject({ size: z.coerce.number().int().min(1).max(100).optional() }),
  headers: z.object({ 'idempotency-key': z.string().max(255).optional() }),
  body: z.strictObject({
    name: z.string().max(10),
    kind: z.enum(['A', 'B']),
    amount: z.strictObject({ value: z.number().int(), currency: z.string() }).optional(),
  }),
};

function echo(prefix: string, family: string): AnyRoute[] {
  return [
    defineRoute({
      method: 'post',
      path: `${prefix}/__test__/echo/{id}`,
      operationId: `testEcho${family}`,
      summary: 'Test only: echoes its validated input',
      tags: ['test'],
      request,
      responses: { 200: { description: 'Echo' } },
      handler(ctx, input) {
        ctx.body = { params: input.params, query: input.query, body: input.body };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${prefix}/__test__/crash`,
      operationId: `testCrash${family}`,
      summary: 'Test only: throws an unexpected error',
      tags: ['test'],
      responses: { 200: { description: 'Never' } },
      handler() {
        throw new Error('database password is hunter2');
      },
    }),
  ];
}

export function testRoutes(): AnyRoute[] {
  return [
    ...echo('/v1/kyc', 'Validation'),
    ...echo('/v1/accounts', 'Plain'),
    defineRoute({
      method: 'post',
      path: '/v1/kyc/__test__/upload',
      operationId: 'testUpload',
      summary: 'Test only: takes a large base64 image under the verification body limit',
      tags: ['test'],
      bodyLimit: 'verification',
      request: { body: z.strictObject({ selfie: z.base64() }) },
      responses: { 200: { description: 'Size of the decoded image' } },
      handler(ctx, { body }) {
        ctx.body = { bytes: Buffer.from(body.selfie, 'base64').length };
      },
    }),
  ];
}

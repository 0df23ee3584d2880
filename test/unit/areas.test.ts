import { strict as assert } from 'node:assert';
import http from 'node:http';
import { once } from 'node:events';
import Koa from 'koa';
import { AreaRouters, areaOf } from '../../api/areas';

describe("unit: routing by area (a request meets its own area's routes only)", () => {
  it('the area is the first segment, or the first two under /v1', () => {
    assert.equal(areaOf('/healthz'), '/healthz');
    assert.equal(areaOf('/healthz/'), '/healthz');
    assert.equal(areaOf('/docs/assets/x.css'), '/docs');
    assert.equal(areaOf('/.well-known/jwks.json'), '/.well-known');
    assert.equal(areaOf('/v1'), '/v1');
    assert.equal(areaOf('/v1/kyc'), '/v1/kyc');
    assert.equal(areaOf('/v1/kyc/applications/1/status'), '/v1/kyc');
    assert.equal(areaOf('/v1/accounts/:accountId/installments'), '/v1/accounts');
    assert.equal(areaOf('/'), '/');
  });

  it('a template whose area is not literal is refused when added', () => {
    assert.throws(() => new AreaRouters().routerFor('/v1/:area/x'), /must be literal/);
  });

  it('answers as one router did: the route, 405 for another method, nothing for an unknown path', async () => {
    const areas = new AreaRouters();
    areas.routerFor('/v1/kyc/applications/:id').get('/v1/kyc/applications/:id', (ctx) => {
      ctx.body = { id: ctx.params.id };
    });
    areas.routerFor('/healthz').get('/healthz', (ctx) => {
      ctx.body = { status: 'ok' };
    });
    const app = new Koa();
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (error) {
        ctx.status = (error as { status?: number }).status ?? 500;
      }
      if (ctx.body == null) {
        const status = ctx.status; // a body would make it 200
        ctx.body = { unanswered: status };
        ctx.status = status;
      }
    });
    app.use(areas.middleware());
    const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const get = async (path: string, method = 'GET') => {
        const response = await fetch(`${base}${path}`, { method });
        return { status: response.status, body: (await response.json()) as unknown };
      };
      assert.deepEqual(await get('/v1/kyc/applications/a1'), { status: 200, body: { id: 'a1' } });
      // Paths are matched with their case, as one router matched them.
      assert.deepEqual(await get('/V1/KYC/applications/a1'), { status: 404, body: { unanswered: 404 } });
      assert.deepEqual(await get('/healthz/'), { status: 200, body: { status: 'ok' } });
      assert.equal((await get('/v1/kyc/applications/a1', 'DELETE')).status, 405);
      assert.deepEqual(await get('/v1/kyc/other'), { status: 404, body: { unanswered: 404 } });
      assert.deepEqual(await get('/v1/nowhere/x'), { status: 404, body: { unanswered: 404 } });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

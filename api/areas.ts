import Router from '@koa/router';
import type Koa from 'koa';

/**
 * The routes split by area, one router each, so that a request is matched against its own
 * area's few routes after one map lookup, not against every route of the service one regular
 * expression after another (@koa/router tests each layer of a router in turn on every request).
 *
 * An area is what a path starts with: its first segment, or its first two under /v1
 * (`/v1/kyc`, `/v1/transactions`, `/healthz`, `/docs`), case and all, as the routers match
 * paths. Every route template must have its area's segments literal (checked when the route is
 * added), which holds for every path of the spec.
 */
export function areaOf(path: string): string {
  const first = path.indexOf('/', 1);
  const head = first === -1 ? path : path.slice(0, first);
  if (head !== '/v1' || first === -1) return head;
  const second = path.indexOf('/', first + 1);
  return second === -1 ? path : path.slice(0, second);
}

export class AreaRouters {
  private readonly areas = new Map<string, Router>();

  /** The router of `template`'s area (made on first use). */
  routerFor(template: string): Router {
    const area = areaOf(template);
    if (area.includes(':')) throw new Error(`${template}: its area (${area}) must be literal`);
    let router = this.areas.get(area);
    if (!router) this.areas.set(area, (router = new Router()));
    return router;
  }

  /**
   * One middleware: the request's area's routes, then its allowed methods (405 for a known path
   * with another method, as one router answered). A path of no area passes on, unanswered (404).
   */
  middleware(): Koa.Middleware {
    const dispatch = new Map<string, Koa.Middleware>();
    for (const [area, router] of this.areas) {
      const routes = router.routes() as unknown as Koa.Middleware;
      const allowed = router.allowedMethods({ throw: true }) as unknown as Koa.Middleware;
      dispatch.set(area, (ctx, next) => routes(ctx, () => allowed(ctx, next)));
    }
    return (ctx, next) => {
      const handle = dispatch.get(areaOf(ctx.path));
      return handle ? handle(ctx, next) : next();
    };
  }
}

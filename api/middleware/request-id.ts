import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

/** A caller's X-Request-Id is kept when it is a plain token; otherwise one is made. Echoed back. */
const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(): Middleware {
  return async (ctx, next) => {
    const given = ctx.get('X-Request-Id');
    const id = ACCEPTABLE.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}

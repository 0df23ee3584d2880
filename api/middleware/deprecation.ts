import type { Context, Middleware } from 'koa';
import type { Config } from '../../config';
import type { AnyRoute } from '../route';

/**
 * Deprecated operations and channels announce it on every answer, errors included (this runs
 * first in the route's chain): RFC 9745 `Deprecation: @<epoch seconds>`, RFC 8594 `Sunset`
 * (configured dates), and `Link`s to the successor (`rel="successor-version"`) and to the
 * reference (`rel="deprecation"`).
 */
export function deprecationOf(
  route: AnyRoute,
  config: Pick<Config, 'DEPRECATED_SINCE' | 'DEPRECATION_SUNSET'>,
): Middleware[] {
  const { deprecation } = route;
  if (!route.deprecated && !deprecation?.when) return [];
  const since = `@${Math.floor(config.DEPRECATED_SINCE.getTime() / 1000)}`;
  const sunset = config.DEPRECATION_SUNSET.toUTCString();
  const reference = `</docs#/${route.tags[0] ?? 'default'}/${route.operationId}>; rel="deprecation"; type="text/html"`;
  const announce = (ctx: Context) => {
    ctx.set('Deprecation', since);
    ctx.set('Sunset', sunset);
    const successor = deprecation?.successor?.replace(/\{(\w+)\}/g, (_, name: string) =>
      encodeURIComponent(String(ctx.params[name] ?? '')),
    );
    ctx.set('Link', successor ? `<${successor}>; rel="successor-version", ${reference}` : reference);
  };
  return [
    async (ctx, next) => {
      if (route.deprecated) announce(ctx);
      try {
        await next();
      } finally {
        // A deprecated channel is known once the body is read; a refusal before that cannot tell.
        if (!route.deprecated && deprecation?.when?.(ctx.request.body)) announce(ctx);
      }
    },
  ];
}

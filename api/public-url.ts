import type { Context } from 'koa';
import type { Config } from '../config';

/**
 * The origin the API's absolute links (a resource's `url`, `confirm_url`, `authorize_url`,
 * declared `format: uri` in /openapi.json) are made under: PUBLIC_BASE_URL when it is set,
 * otherwise the request's own origin, its scheme and Host as the client sent them, or as the load
 * balancer forwarded them (X-Forwarded-Proto and X-Forwarded-Host, believed only with
 * TRUST_PROXY, as Koa's `ctx.protocol` and `ctx.host` do). The request's origin is the caller's
 * own words, and answers only that caller. A Host that is not a host (a path, a query, odd bytes)
 * falls back to HOST:PORT, where the API listens.
 */
export function publicBaseUrl(ctx: Context, config: Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL;
  const protocol = ctx.protocol === 'https' ? 'https' : 'http';
  const host = ctx.host;
  try {
    if (host && new URL(`${protocol}://${host}`).host === host.toLowerCase())
      return `${protocol}://${host.toLowerCase()}`;
  } catch {
    // not a host: the listening address below
  }
  const listening = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return `http://${listening}:${config.PORT}`;
}

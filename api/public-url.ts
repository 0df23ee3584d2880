import type { Context } from 'koa';
import type { Config } from '../config';

type Settings = Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT' | 'TRUST_PROXY' | 'TRUST_PROXY_HOPS'>;

/**
 * The entry of a forwarded header our own proxies wrote: TRUST_PROXY_HOPS from the right, as for
 * X-Forwarded-For (entries further left are the client's own words); the leftmost when fewer.
 */
function forwarded(ctx: Context, header: string, hops: number): string | undefined {
  const values = ctx
    .get(header)
    .split(',')
    .map((value) => value.trim())
    .filter(Boolean);
  return values[Math.max(0, values.length - hops)];
}

/**
 * The origin the API's absolute links (a resource's `url`, `confirm_url`, `authorize_url`,
 * declared `format: uri` in /openapi.json) are made under: PUBLIC_BASE_URL when it is set,
 * otherwise the request's own origin, its scheme and Host as the client sent them, or as the load
 * balancer forwarded them (X-Forwarded-Proto and X-Forwarded-Host, believed only with
 * TRUST_PROXY, and only the entries our proxies wrote). The request's origin answers only that
 * caller. A Host that is not a host (a path, a query, odd bytes) falls back to where the API
 * listens. Production sets PUBLIC_BASE_URL: the worker's links (callbacks, e-mails) need it.
 */
export function publicBaseUrl(ctx: Context, config: Settings): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL;
  const proxied = config.TRUST_PROXY;
  const scheme = (proxied && forwarded(ctx, 'X-Forwarded-Proto', config.TRUST_PROXY_HOPS)) || ctx.protocol;
  const protocol = scheme.toLowerCase() === 'https' ? 'https' : 'http';
  const host = (
    (proxied && forwarded(ctx, 'X-Forwarded-Host', config.TRUST_PROXY_HOPS)) ||
    ctx.get('Host')
  ).toLowerCase();
  try {
    if (host && new URL(`${protocol}://${host}`).host === host) return `${protocol}://${host}`;
  } catch {
    // not a host: the listening address below
  }
  const listening = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
  return `http://${listening.includes(':') ? `[${listening}]` : listening}:${config.PORT}`;
}

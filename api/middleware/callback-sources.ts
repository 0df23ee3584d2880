import { BlockList, isIPv6 } from 'node:net';
import type { Middleware } from 'koa';
import { ErrorCode, ServiceError } from '../../domain/errors';

const family = (address: string) => (isIPv6(address) ? 'ipv6' : 'ipv4');

/**
 * Callbacks only from the provider's published source addresses, when they are configured
 * (addresses and CIDR blocks, checked by config/index.ts); nothing when the list is empty.
 * Behind a load balancer TRUST_PROXY makes the client's address the one checked.
 */
export function callbackSources(allowed: readonly string[], refused: () => void): Middleware[] {
  if (allowed.length === 0) return [];
  const list = new BlockList();
  for (const entry of allowed) {
    const [address = '', prefix] = entry.split('/');
    if (prefix === undefined) list.addAddress(address, family(address));
    else list.addSubnet(address, Number(prefix), family(address));
  }
  return [
    async (ctx, next) => {
      const address = ctx.ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, ''); // IPv4 seen through an IPv6 socket
      if (!list.check(address, family(address))) {
        refused();
        throw new ServiceError(ErrorCode.FORBIDDEN, "Callbacks are taken only from the provider's addresses");
      }
      await next();
    },
  ];
}

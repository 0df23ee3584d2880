import { lookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Which addresses a webhook may reach. `public` (production): only public unicast addresses;
 * `loopback` adds 127.0.0.0/8 and ::1 (npm start's receiver simulator); `private` adds the private
 * ranges too (a receiver inside one's own network). Link-local (169.254.0.0/16, where cloud
 * metadata answers, and fe80::/10), unspecified, multicast and reserved addresses are refused
 * whatever the setting.
 */
export type AllowedAddresses = 'public' | 'loopback' | 'private';

function blockList(ranges: [string, number, 'ipv4' | 'ipv6'][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

const ALWAYS = blockList([
  ['0.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  // IPv4 inside IPv6 (compatible, SIIT, NAT64 local use, 6to4, Teredo): where a translator sits, they reach IPv4 hosts.
  ['::', 96, 'ipv6'],
  ['::ffff:0:0:0', 96, 'ipv6'],
  ['64:ff9b:1::', 48, 'ipv6'],
  ['2002::', 16, 'ipv6'],
  ['2001::', 32, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['64:ff9b::', 96, 'ipv6'],
]);
const LOOPBACK = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
]);
const PRIVATE = blockList([
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
]);

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1, or ::ffff:a00:1 as URLs write it) is judged as the IPv4 address it carries. */
function unmapped(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return { address: dotted[1]!, family: 'ipv4' };
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return { address: [high >> 8, high & 255, low >> 8, low & 255].join('.'), family: 'ipv4' };
  }
  return { address, family: isIP(address) === 6 ? 'ipv6' : 'ipv4' };
}

/** Why a webhook may not reach this IP address, or undefined when it may. */
export function addressRefusal(ip: string, allowed: AllowedAddresses): string | undefined {
  const { address, family } = unmapped(ip);
  // Loopback first: ::1 lies inside the always-refused ::/96 (IPv4-compatible) block.
  if (LOOPBACK.check(address, family)) return allowed === 'public' ? `${ip} is a loopback address` : undefined;
  if (ALWAYS.check(address, family)) return `${ip} is a link-local, unspecified, multicast or reserved address`;
  if (PRIVATE.check(address, family)) return allowed === 'private' ? undefined : `${ip} is a private address`;
  return undefined;
}

export class AddressRefused extends Error {
  override readonly name = 'AddressRefused';
  readonly code = 'EADDRREFUSED';
}

/**
 * A `lookup` for sockets that resolves as usual and refuses a host any of whose addresses is
 * refused: the address checked is the one connected to, so a name that resolves to a public
 * address when registered and to an internal one later (DNS rebinding) never reaches it.
 */
export function checkedLookup(allowed: AllowedAddresses): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as { address: string; family: number }[];
      // Which address, and why, stays ours: a name's internal address is not told to whoever named it.
      if (list.some((a) => addressRefusal(a.address, allowed) !== undefined))
        return callback(new AddressRefused(`${hostname} resolves to an address webhooks may not reach`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/**
 * Every address of `hostname` (or the literal IP itself), each checked; why one is refused, or
 * undefined. A name that does not resolve, or not within `timeoutMs`, is refused with the same
 * words as one resolving to a refused address: the answer tells nothing of our network.
 */
export async function hostRefusal(
  hostname: string,
  allowed: AllowedAddresses,
  timeoutMs = 5_000,
): Promise<string | undefined> {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return addressRefusal(host, allowed);
  const refusal = `${host} must resolve to addresses webhooks may reach`;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(refusal), timeoutMs);
    checkedLookup(allowed)(host, { all: true }, (error) => {
      clearTimeout(timer);
      resolve(error ? refusal : undefined);
    });
  });
}

/** Settings naming where the service's own parts and dependencies listen (URLs, or host:port). */
export const OWN_ADDRESS_SETTINGS = [
  'PUBLIC_BASE_URL',
  'DATABASE_URL',
  'TEMPORAL_ADDRESS',
  'AUTH_JWKS_URL',
  'KYC_PROVIDER_URL',
  'MOBILE_MONEY_URL',
  'SMS_PROVIDER_URL',
  'EMAIL_PROVIDER_URL',
  'BANK_URL',
  'OBJECT_STORE_ENDPOINT',
  'EXTRACTION_URL',
] as const;
type OwnAddresses = Partial<Record<(typeof OWN_ADDRESS_SETTINGS)[number], string>> & {
  PORT: number;
  WORKER_METRICS_PORT: number;
  FINANCING_ISSUERS?: readonly { jwks_url: string }[];
};

/** Where our own infrastructure listens by default, refused whether configured here or not. */
const INFRASTRUCTURE_PORTS = [5432 /* Postgres */, 7233 /* Temporal */, 8233 /* Temporal UI */, 9464 /* metrics */];
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'postgres:': 5432, 'postgresql:': 5432 };

/**
 * The port a URL or `host:port` setting writes out, if it does. A scheme's default (443, 80) is
 * not taken: every receiver on a private network listens there, and a setting that names no port
 * is a public or load-balanced service anyway. Postgres's default is among INFRASTRUCTURE_PORTS.
 */
function portOf(address: string): number | undefined {
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address : `tcp://${address}`);
    return url.port ? Number(url.port) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The ports of the service itself (the API, the worker's metrics), its dependencies (Postgres,
 * Temporal, the object store) and its providers (under `npm start`, their simulators and control
 * APIs). A webhook aimed at one of them is held to public addresses only, whatever
 * WEBHOOK_ALLOWED_ADDRESSES says: a tenant cannot aim its deliveries at our own services on
 * loopback or the private network and read what they answer.
 */
export function servicePorts(config: OwnAddresses): Set<number> {
  const ports = new Set<number>([...INFRASTRUCTURE_PORTS, config.PORT, config.WORKER_METRICS_PORT]);
  const addresses = [
    ...OWN_ADDRESS_SETTINGS.map((name) => config[name]),
    ...(config.FINANCING_ISSUERS ?? []).map((issuer) => issuer.jwks_url),
  ];
  for (const address of addresses) {
    const port = address === undefined ? undefined : portOf(address);
    if (port !== undefined) ports.add(port);
  }
  return ports;
}

/** The addresses a webhook to `target` may reach: public only when it aims at one of the service's own ports. */
export function allowedFor(target: URL, allowed: AllowedAddresses, ownPorts: ReadonlySet<number>): AllowedAddresses {
  const port = target.port ? Number(target.port) : DEFAULT_PORTS[target.protocol];
  return port !== undefined && ownPorts.has(port) ? 'public' : allowed;
}

/**
 * The SSRF guard of outgoing webhooks (workflow WEBHOOK steps, webhook endpoints): which
 * addresses no webhook may reach unless WEBHOOK_ALLOW_PRIVATE, and a lookup that pins a
 * connection to the address that was checked.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, isIPv4, type LookupFunction } from 'node:net';

/** One resolved address, as `dns.lookup(…, {all: true})` returns it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (default: the system resolver, /etc/hosts included). */
export type LookupAll = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemLookup: LookupAll = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** A refusal of the SSRF guard: not retried (the same address would be refused again). */
export class BlockedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(`${host} resolves to ${address} (${range}): private addresses are refused (WEBHOOK_ALLOW_PRIVATE)`);
    this.name = 'BlockedAddressError';
  }
}

type V4Range = readonly [base: number, bits: number, name: string];

const v4 = (dotted: string): number => dotted.split('.').reduce((n, part) => n * 256 + Number(part), 0);

/** IANA special-purpose IPv4 blocks and the other ranges no public webhook lives in. */
const V4_BLOCKED: readonly V4Range[] = (
  [
    ['0.0.0.0', 8, 'this network'],
    ['10.0.0.0', 8, 'private'],
    ['100.64.0.0', 10, 'carrier-grade NAT'],
    ['127.0.0.0', 8, 'loopback'],
    ['169.254.0.0', 16, 'link-local'],
    ['172.16.0.0', 12, 'private'],
    ['192.0.0.0', 24, 'IETF protocol assignments'],
    ['192.0.2.0', 24, 'documentation'],
    ['192.88.99.0', 24, '6to4 relay'],
    ['192.168.0.0', 16, 'private'],
    ['198.18.0.0', 15, 'benchmarking'],
    ['198.51.100.0', 24, 'documentation'],
    ['203.0.113.0', 24, 'documentation'],
    ['224.0.0.0', 4, 'multicast'],
    ['240.0.0.0', 4, 'reserved'],
  ] as const
).map(([base, bits, name]) => [v4(base), bits, name] as const);

function blockedV4(n: number): string | undefined {
  for (const [base, bits, name] of V4_BLOCKED) {
    const size = 2 ** (32 - bits);
    if (n >= base && n < base + size) return name;
  }
  return undefined;
}

/** The 8 16-bit groups of a valid IPv6 address (dotted IPv4 tail and zone id handled). */
function v6Groups(address: string): number[] {
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted) {
    const n = v4(dotted);
    text = `${text.slice(0, -dotted.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const h = parse(head);
  const t = tail === undefined ? [] : parse(tail);
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

const embeddedV4 = (hi: number, lo: number): number => hi * 65536 + lo;

function blockedV6(address: string): string | undefined {
  const g = v6Groups(address);
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(8)) return 'unspecified';
  if (zeroTo(7) && g7 === 1) return 'loopback';
  if (zeroTo(5) && g5 === 0xffff) {
    const inner = blockedV4(embeddedV4(g6, g7));
    return inner ? `IPv4-mapped ${inner}` : undefined;
  }
  if (zeroTo(6)) return 'IPv4-compatible (deprecated)';
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    const inner = blockedV4(embeddedV4(g6, g7));
    return inner ? `NAT64 of ${inner}` : undefined;
  }
  if (g0 === 0x2002) {
    const inner = blockedV4(embeddedV4(g1, g2));
    return inner ? `6to4 of ${inner}` : undefined;
  }
  // Everything else must be global unicast (2000::/3); that leaves out ::/8, 64:ff9b:1::/48,
  // 100::/64 (discard), fc00::/7 (unique local), fe80::/10 (link-local), fec0::/10, ff00::/8.
  if (g0 < 0x2000 || g0 > 0x3fff) return 'not global unicast';
  if (g0 === 0x2001 && g1 < 0x200) return 'IETF protocol assignments (Teredo, benchmarking, ORCHID)';
  if (g0 === 0x2001 && g1 === 0xdb8) return 'documentation';
  if (g0 === 0x3fff && g1 < 0x1000) return 'documentation';
  return undefined;
}

/**
 * Why `address` (a literal IP) is no place for a webhook, or undefined when it is a public
 * unicast address. IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 addresses are judged by the IPv4
 * address they carry; IPv4-compatible ones (deprecated) are refused outright.
 */
export function blockedRange(address: string): string | undefined {
  if (isIPv4(address)) return blockedV4(v4(address));
  if (isIP(address) === 6) return blockedV6(address);
  return 'not an IP address';
}

/** `[::1]` → `::1`: URL.hostname keeps the brackets of an IPv6 literal. */
export const bareHost = (hostname: string): string => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);

/**
 * The address to connect to for `hostname`: the literal itself, or the first address it
 * resolves to. Unless `allowPrivate`, every resolved address must be public (one private
 * answer refuses the host: a resolver may hand the connection any of them), else
 * {@link BlockedAddressError}. The caller connects to the returned address and nothing else.
 */
export async function resolveTarget(hostname: string, opts: { lookup: LookupAll; allowPrivate: boolean }): Promise<ResolvedAddress> {
  const host = bareHost(hostname);
  const family = isIP(host);
  const addresses: ResolvedAddress[] = family === 0 ? await opts.lookup(host) : [{ address: host, family: family === 6 ? 6 : 4 }];
  const first = addresses[0];
  if (!first) throw new Error(`${host} resolves to no address`);
  if (!opts.allowPrivate) {
    for (const a of addresses) {
      const range = blockedRange(a.address);
      if (range) throw new BlockedAddressError(host, a.address, range);
    }
  }
  return first;
}

/** Connects to `target` whatever the host name resolves to now: no second DNS answer can move it. */
export const pinnedLookup =
  (target: ResolvedAddress): LookupFunction =>
  (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };

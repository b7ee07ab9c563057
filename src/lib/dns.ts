import { Resolver } from 'node:dns/promises';

/** Outcome of one lookup: found, definitively absent (NXDOMAIN/NODATA), or unknown (timeout, SERVFAIL…). */
export type Lookup<T> = { status: 'found'; records: T[] } | { status: 'missing' } | { status: 'error'; error: string };

export interface MxRecord {
  exchange: string;
  priority: number;
}

/** DNS lookups through DNS_SERVERS (or the system resolvers), each bounded in time. */
export interface Dns {
  /** TXT records, each joined from its character-strings. */
  txt(name: string): Promise<Lookup<string>>;
  mx(name: string): Promise<Lookup<MxRecord>>;
  /** A and AAAA addresses together. */
  addresses(name: string): Promise<Lookup<string>>;
}

/** Options of {@link createDns}. */
export interface DnsOptions {
  /** host[:port] entries; empty means the system resolvers. */
  servers: readonly string[];
  /** Per-try timeout. Default 2,000 ms. */
  timeoutMs?: number;
  /** Tries per server. Default 2. */
  tries?: number;
}

const MISSING = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME']);

async function lookup<T>(run: () => Promise<T[]>): Promise<Lookup<T>> {
  try {
    const records = await run();
    return records.length > 0 ? { status: 'found', records } : { status: 'missing' };
  } catch (err) {
    const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
    if (MISSING.has(code)) return { status: 'missing' };
    return { status: 'error', error: code || (err instanceof Error ? err.message : String(err)) };
  }
}

export function createDns(opts: DnsOptions): Dns {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
  if (opts.servers.length > 0) resolver.setServers([...opts.servers]);
  return {
    txt: (name) => lookup(async () => (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''))),
    mx: (name) => lookup(() => resolver.resolveMx(name)),
    addresses: async (name) => {
      const [v4, v6] = await Promise.all([lookup(() => resolver.resolve4(name)), lookup(() => resolver.resolve6(name))]);
      const records = [...(v4.status === 'found' ? v4.records : []), ...(v6.status === 'found' ? v6.records : [])];
      if (records.length > 0) return { status: 'found', records };
      if (v4.status === 'error') return v4;
      if (v6.status === 'error') return v6;
      return { status: 'missing' };
    },
  };
}

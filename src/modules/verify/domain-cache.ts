import type { Dns, Lookup, MxRecord } from '../../lib/dns.js';

/** The three DNS answers /v1/verify needs about one domain. */
export interface DomainDns {
  mx: Lookup<MxRecord>;
  /** A and AAAA of the domain itself. */
  addresses: Lookup<string>;
  /** A and AAAA of `www.<domain>`. */
  www: Lookup<string>;
}

/** Options of {@link createDomainCache}. */
export interface DomainCacheOptions {
  /** How long complete answers (found or missing) are reused. Default 300,000 ms (5 minutes). */
  ttlMs?: number;
  /** How long answers with a failed lookup (timeout, SERVFAIL) are reused. Default 30,000 ms. */
  errorTtlMs?: number;
  /** Domains kept at most; the least recently used go first. Default 10,000. */
  maxEntries?: number;
  /** The clock (tests). Default `Date.now`. */
  now?: () => number;
}

export interface DomainCache {
  /** The answers for `domain` (lower-case ASCII), from memory when fresh. */
  lookup(domain: string): Promise<DomainDns>;
  /** Domains held (fresh, stale or in flight). */
  readonly size: number;
}

interface Entry {
  value: Promise<DomainDns>;
  /** Infinity while the lookups are in flight: concurrent callers share them. */
  expiresAt: number;
}

const failed = (answers: DomainDns) => [answers.mx, answers.addresses, answers.www].some((l) => l.status === 'error');

async function resolveDomain(dns: Dns, domain: string): Promise<DomainDns> {
  const [mx, addresses, www] = await Promise.all([dns.mx(domain), dns.addresses(domain), dns.addresses(`www.${domain}`)]);
  return { mx, addresses, www };
}

/**
 * A per-process, bounded LRU of DNS answers per domain, so repeated checks of one domain do not
 * ask DNS again. Record TTLs are not read: a fixed short TTL bounds staleness. Failures are kept
 * briefly too (as resolvers do, RFC 9520) so a dead name server does not stall every request.
 */
export function createDomainCache(dns: Dns, opts: DomainCacheOptions = {}): DomainCache {
  const ttlMs = opts.ttlMs ?? 300_000;
  const errorTtlMs = opts.errorTtlMs ?? 30_000;
  const maxEntries = Math.max(1, opts.maxEntries ?? 10_000);
  const now = opts.now ?? Date.now;
  // A Map iterates in insertion order: re-inserting on every hit keeps the least recent first.
  const entries = new Map<string, Entry>();

  function remember(domain: string): Entry {
    const entry: Entry = { value: resolveDomain(dns, domain), expiresAt: Infinity };
    entries.set(domain, entry);
    for (const oldest of entries.keys()) {
      if (entries.size <= maxEntries) break;
      entries.delete(oldest);
    }
    entry.value.then(
      (answers) => {
        entry.expiresAt = now() + (failed(answers) ? errorTtlMs : ttlMs);
      },
      () => {
        if (entries.get(domain) === entry) entries.delete(domain);
      },
    );
    return entry;
  }

  return {
    lookup(domain) {
      const hit = entries.get(domain);
      if (hit) entries.delete(domain);
      if (hit && hit.expiresAt > now()) {
        entries.set(domain, hit);
        return hit.value;
      }
      return remember(domain).value;
    },
    get size() {
      return entries.size;
    },
  };
}

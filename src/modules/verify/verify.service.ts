import type { Dns, Lookup } from '../../lib/dns.js';
import type { ParsedAddress } from './checks.js';
import { createDomainCache, type DomainCacheOptions, type DomainDns } from './domain-cache.js';
import { type EmailVerification, VERIFY_REASONS, type VerifyReason } from './verify.schema.js';

/** Options of {@link createVerifier}. */
export interface VerifierOptions {
  /** Where lookups go (the app's DNS_SERVERS resolver, or a tuned one in tests). */
  dns: Dns;
  /** Per-domain answer cache; defaults of {@link DomainCacheOptions}. */
  cache?: DomainCacheOptions;
}

export interface Verifier {
  verify(email: string): Promise<EmailVerification>;
}

/** What DNS says about a domain, reduced to the result's flags. */
export interface DnsFindings {
  domainExists: boolean;
  hasWebsite: boolean;
  hasMxRecords: boolean;
  /** Mail can be delivered: real MX records, or none at all but A/AAAA (RFC 5321 §5.1 implicit MX). */
  acceptsMail: boolean;
  /** Every lookup answered and none found anything: the name does not exist. */
  domainMissing: boolean;
  reasons: VerifyReason[];
}

const found = <T>(l: Lookup<T>) => l.status === 'found';
const missing = <T>(l: Lookup<T>) => l.status === 'missing';
const isTimeout = <T>(l: Lookup<T>) => l.status === 'error' && l.error === 'ETIMEOUT';
/** The root name: a null MX (RFC 7505) is `0 .`, which resolvers report as "" or ".". */
const isRoot = (exchange: string) => exchange === '' || exchange === '.';

/**
 * Reads the three answers conservatively: a failed lookup is "unknown", never "absent", so it
 * yields no domain_not_found / no_mx_records, and dns_timeout or dns_error instead whenever it
 * leaves a flag or the verdict undecided.
 */
export function readDns(answers: DomainDns): DnsFindings {
  const { mx, addresses, www } = answers;
  const mailHosts = mx.status === 'found' ? mx.records.filter((r) => !isRoot(r.exchange)) : [];
  const hasMxRecords = mailHosts.length > 0;
  const hasWebsite = found(addresses) || found(www);
  const domainExists = found(mx) || hasWebsite;
  const acceptsMail = hasMxRecords || (missing(mx) && found(addresses));
  const domainMissing = missing(mx) && missing(addresses) && missing(www);

  const reasons: VerifyReason[] = [];
  if (domainMissing) reasons.push('domain_not_found');
  else if (missing(mx) && domainExists) reasons.push('no_mx_records');
  if (found(mx) && !hasMxRecords) reasons.push('null_mx');
  const undecided: Lookup<unknown>[] = [mx];
  if (missing(mx)) undecided.push(addresses);
  if (!hasWebsite) undecided.push(addresses, www);
  const failedLookups = undecided.filter((l) => l.status === 'error');
  if (failedLookups.length > 0) reasons.push(failedLookups.some(isTimeout) ? 'dns_timeout' : 'dns_error');
  return { domainExists, hasWebsite, hasMxRecords, acceptsMail, domainMissing, reasons };
}

const byListOrder = (a: VerifyReason, b: VerifyReason) => VERIFY_REASONS.indexOf(a) - VERIFY_REASONS.indexOf(b);

function invalidResult(email: string): EmailVerification {
  return {
    email,
    valid: false,
    isDisposable: false,
    isAlias: false,
    isTypo: false,
    isPlusAddressed: false,
    isPersonalEmail: false,
    domainExists: false,
    hasWebsite: false,
    hasMxRecords: false,
    reasons: ['invalid_format'],
  };
}

type Checks = typeof import('./checks.js');
let checksLoaded: Promise<Checks> | undefined;
/**
 * The checks and their lists (mailchecker's throw-away domains, the free-mail providers: ~6 MB of
 * heap) at the first verification, not at start (docs/performance.md "Memory").
 */
const loadChecks = () => (checksLoaded ??= import('./checks.js'));

function buildResult(checks: Checks, email: string, addr: ParsedAddress, dns: DnsFindings): EmailVerification {
  const { isAlias, isDisposableDomain, isListedPersonalDomain, isPlusAddressed, suggestCorrection } = checks;
  const isDisposable = isDisposableDomain(addr.domain);
  const suggestedEmail = suggestCorrection(addr, { domainMissing: dns.domainMissing });
  const isTypo = suggestedEmail !== undefined;
  const reasons: VerifyReason[] = [...dns.reasons];
  if (isDisposable) reasons.push('disposable');
  if (isTypo) reasons.push('possible_typo');
  return {
    email,
    valid: !isDisposable && dns.acceptsMail,
    isDisposable,
    isAlias: isAlias(addr),
    isTypo,
    isPlusAddressed: isPlusAddressed(addr),
    isPersonalEmail: isListedPersonalDomain(addr.domain) && !isDisposable && !isTypo,
    domainExists: dns.domainExists,
    hasWebsite: dns.hasWebsite,
    hasMxRecords: dns.hasMxRecords,
    reasons: reasons.sort(byListOrder),
    ...(suggestedEmail !== undefined && { suggestedEmail }),
  };
}

/**
 * The /v1/verify checks. `valid` = well-formed && not disposable && the domain accepts mail
 * (docs/verify.md). DNS answers are cached per domain inside the verifier.
 */
export function createVerifier(opts: VerifierOptions): Verifier {
  const cache = createDomainCache(opts.dns, opts.cache);
  return {
    async verify(input) {
      const email = input.trim();
      const checks = await loadChecks();
      const addr = checks.parseAddress(email);
      if (!addr) return invalidResult(email);
      return buildResult(checks, email, addr, readDns(await cache.lookup(addr.domain)));
    },
  };
}

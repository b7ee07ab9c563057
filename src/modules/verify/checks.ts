// Pure checks of one address: syntax, list look-ups and typo suggestions. No I/O.
import { domainToASCII } from 'node:url';
import { POPULAR_DOMAINS, run as suggestSpelling } from '@zootools/email-spell-checker';
import commonProviders from 'email-providers/common.json' with { type: 'json' };
import allProviders from 'email-providers/all.json' with { type: 'json' };
import MailChecker from 'mailchecker';

/** An address that passed {@link parseAddress}. */
export interface ParsedAddress {
  /** The local part as given (case kept: only the receiving server may fold it). */
  local: string;
  /** The domain in lower-case ASCII (IDNs in their xn-- form): what DNS and the lists see. */
  domain: string;
}

/** RFC 5321 §4.5.3.1: local part 64 octets, domain 255 (253 without the root dot), path 256 with `<>`. */
const MAX_LOCAL_OCTETS = 64;
const MAX_DOMAIN_OCTETS = 253;
const MAX_ADDRESS_OCTETS = 254;

/** RFC 5322 atext, plus the non-ASCII letters, marks and digits RFC 6531 (SMTPUTF8) allows. */
const ATOM = /^[\p{L}\p{M}\p{N}!#$%&'*+/=?^_`{|}~-]+$/u;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const NON_ASCII = /[^\x00-\x7f]/; // eslint-disable-line no-control-regex

const octets = (s: string) => Buffer.byteLength(s, 'utf8');

function parseDomain(raw: string): string | undefined {
  const domain = NON_ASCII.test(raw) ? domainToASCII(raw) : raw.toLowerCase();
  if (!domain || octets(domain) > MAX_DOMAIN_OCTETS) return undefined;
  const labels = domain.split('.');
  // At least two labels (no dotless domains), each an LDH label; an all-digit TLD would be an IP address.
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return undefined;
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) return undefined;
  return domain;
}

/**
 * A pragmatic RFC 5321/5322 syntax check: one `@`; a dot-atom local part (no quoted strings, no
 * comments) of at most 64 octets without leading, trailing or consecutive dots; a host name of
 * LDH labels (1–63 characters, at least two labels, IDNs converted to xn--) of at most 253
 * octets; no domain literals (`[192.0.2.1]`); at most 254 octets in all. `undefined` when invalid.
 */
export function parseAddress(email: string): ParsedAddress | undefined {
  const at = email.indexOf('@');
  if (at <= 0 || at !== email.lastIndexOf('@')) return undefined;
  const local = email.slice(0, at);
  if (octets(local) > MAX_LOCAL_OCTETS || !local.split('.').every((atom) => ATOM.test(atom))) return undefined;
  const domain = parseDomain(email.slice(at + 1));
  if (!domain || octets(local) + 1 + domain.length > MAX_ADDRESS_OCTETS) return undefined;
  return { local, domain };
}

/** `local+tag@…` (RFC 5233 subaddressing): a `+` after at least one character of the local part. */
export function isPlusAddressed(addr: ParsedAddress): boolean {
  return addr.local.indexOf('+') > 0;
}

/** Gmail ignores dots in the local part, and googlemail.com is the same mailbox as gmail.com. */
const GMAIL_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * A variant of another mailbox that reaches the same inbox: plus-addressed, a dotted Gmail local
 * part (`j.doe@gmail.com` is `jdoe@gmail.com`), or any googlemail.com address. Role accounts
 * (`info@`, `support@`) are real mailboxes, not aliases.
 */
export function isAlias(addr: ParsedAddress): boolean {
  if (isPlusAddressed(addr)) return true;
  if (!GMAIL_DOMAINS.has(addr.domain)) return false;
  return addr.domain === 'googlemail.com' || addr.local.includes('.');
}

const disposableDomains = MailChecker.blacklist();

/** The domain or one of its parents is on mailchecker's list of throw-away providers. */
export function isDisposableDomain(domain: string): boolean {
  for (let d = domain; d.includes('.'); d = d.slice(d.indexOf('.') + 1)) {
    if (disposableDomains.has(d)) return true;
  }
  return false;
}

/** ~8,700 domains of free/personal mailbox providers (email-providers all.json). */
const personalDomains = new Set<string>(allProviders);

/** Exactly a listed free-mail domain (a company's own domain never is). */
export function isListedPersonalDomain(domain: string): boolean {
  return personalDomains.has(domain);
}

/**
 * Well-known mailbox providers: the spell checker's own list plus email-providers common.json.
 * A suggestion pointing at one of them is trusted; an address already at one is never a typo.
 * (all.json is not used here: it also lists typo domains such as gmial.com.)
 */
const wellKnownDomains = new Set<string>([...POPULAR_DOMAINS, ...commonProviders]);

/** Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps. */
export function editDistance(a: string, b: string): number {
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (prevPrev[j - 2] ?? 0) + 1);
      row.push(d);
    }
    prevPrev = prev;
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** Short domains tolerate one edit, longer ones two (ibm.com is not a typo of aim.com). */
const maxEdits = (domain: string) => (domain.length <= 9 ? 1 : 2);

/**
 * The corrected address when the domain looks misspelt, else `undefined`. The spell checker's
 * raw guesses are filtered, because on their own they flag real domains (mac.com → mail.com,
 * hp.com → qq.com, firm.law → firm.ca). A suggestion is kept only when:
 * - it changes the domain, and the domain is not itself a well-known provider;
 * - it is within {@link maxEdits} edits of the domain and is not a disposable domain;
 * - it points at a well-known provider (gmial.com → gmail.com), or else — a guess about an
 *   unknown domain's spelling — DNS said definitively that the typed domain does not exist.
 */
export function suggestCorrection(addr: ParsedAddress, opts: { domainMissing: boolean }): string | undefined {
  if (wellKnownDomains.has(addr.domain)) return undefined;
  const suggestion = suggestSpelling({ email: `${addr.local}@${addr.domain}` });
  const domain = suggestion?.domain.toLowerCase();
  if (!domain || domain === addr.domain || !parseDomain(domain)) return undefined;
  if (editDistance(addr.domain, domain) > maxEdits(addr.domain) || isDisposableDomain(domain)) return undefined;
  if (!wellKnownDomains.has(domain) && !opts.domainMissing) return undefined;
  return `${addr.local}@${domain}`;
}

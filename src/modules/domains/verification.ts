import type { DomainRecord } from '../../db/schema.js';
import type { Dns, Lookup } from '../../lib/dns.js';

// DNS checks of a sender domain's records; no database here. Only the DKIM record decides
// whether a domain is verified; SPF and DMARC are reported (DESIGN §6).

/** Recommended SPF: the domain's own A and MX hosts, soft-fail for the rest (docs/domains.md). */
export const RECOMMENDED_SPF = 'v=spf1 a mx ~all';
/** Recommended DMARC: report only, so publishing it never blocks mail. */
export const RECOMMENDED_DMARC = 'v=DMARC1; p=none;';

/** Outcome of one record: published as expected, absent, different, or unknown (transient). */
export type RecordStatus = 'verified' | 'missing' | 'mismatch' | 'error';

export const RecordError = {
  missing: 'record not found',
  mismatch: 'value does not match',
  timeout: 'lookup timed out',
  multipleSpf: 'more than one SPF record is published (SPF permerror)',
  multipleDmarc: 'more than one DMARC record is published',
  takenByAnotherProject: 'the domain is already verified by another project',
} as const;

export interface DkimTarget {
  domain: string;
  selector: string;
  /** Base64 DER SPKI. */
  publicKey: string;
}

export const dkimRecordName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;
export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;

/** The records to publish, none verified yet. */
export function expectedRecords(target: DkimTarget): DomainRecord[] {
  const record = (name: string, value: string, purpose: DomainRecord['purpose'], required: boolean): DomainRecord => ({
    type: 'TXT',
    name,
    value,
    purpose,
    required,
    verified: false,
  });
  return [
    record(dkimRecordName(target.selector, target.domain), dkimRecordValue(target.publicKey), 'DKIM', true),
    record(target.domain, RECOMMENDED_SPF, 'SPF', false),
    record(`_dmarc.${target.domain}`, RECOMMENDED_DMARC, 'DMARC', false),
  ];
}

/**
 * A tag list (`v=DKIM1; k=rsa; p=…`) in one spelling: whitespace around `;` and `=` dropped, an
 * empty last tag dropped, and whitespace inside the base64 `p=` value removed (RFC 6376 allows
 * folding there, and DNS consoles split long values with spaces).
 */
export function canonicalTagList(value: string): string {
  return value
    .split(';')
    .map((tag) => tag.trim().replace(/^([^=\s]+)\s*=\s*/, '$1='))
    .filter((tag) => tag !== '')
    .map((tag) => (tag.startsWith('p=') ? tag.replace(/\s+/g, '') : tag))
    .join('; ');
}

function lookupError(error: string): string {
  return error === 'ETIMEOUT' ? RecordError.timeout : `lookup failed (${error})`;
}

interface Outcome {
  status: RecordStatus;
  error?: string;
}

function dkimOutcome(lookup: Lookup<string>, expected: string): Outcome {
  if (lookup.status === 'error') return { status: 'error', error: lookupError(lookup.error) };
  if (lookup.status === 'missing') return { status: 'missing', error: RecordError.missing };
  const want = canonicalTagList(expected);
  if (lookup.records.some((value) => canonicalTagList(value) === want)) return { status: 'verified' };
  return { status: 'mismatch', error: RecordError.mismatch };
}

/** SPF and DMARC: one record of the kind must exist; its exact value is the operator's choice. */
function policyOutcome(lookup: Lookup<string>, prefix: RegExp, multiple: string): Outcome {
  if (lookup.status === 'error') return { status: 'error', error: lookupError(lookup.error) };
  const found = lookup.status === 'found' ? lookup.records.filter((value) => prefix.test(value.trim())) : [];
  if (found.length === 0) return { status: 'missing', error: RecordError.missing };
  if (found.length > 1) return { status: 'mismatch', error: multiple };
  return { status: 'verified' };
}

export interface DomainCheck {
  /** The expected records with this check's outcome on each. */
  records: DomainRecord[];
  /** The DKIM record's outcome: what decides the domain's state. */
  dkim: RecordStatus;
}

/** Looks up the three records (in parallel, each bounded by the resolver's timeout). */
export async function checkDomainRecords(dns: Dns, target: DkimTarget): Promise<DomainCheck> {
  const [dkim, spf, dmarc] = expectedRecords(target);
  if (!dkim || !spf || !dmarc) throw new Error('expectedRecords returns DKIM, SPF and DMARC');
  const [dkimLookup, spfLookup, dmarcLookup] = await Promise.all([dns.txt(dkim.name), dns.txt(spf.name), dns.txt(dmarc.name)]);
  const dkimResult = dkimOutcome(dkimLookup, dkim.value);
  const outcomes: [DomainRecord, Outcome][] = [
    [dkim, dkimResult],
    [spf, policyOutcome(spfLookup, /^v=spf1(\s|$)/i, RecordError.multipleSpf)],
    [dmarc, policyOutcome(dmarcLookup, /^v=DMARC1\s*(;|$)/i, RecordError.multipleDmarc)],
  ];
  const records = outcomes.map(([record, outcome]) => ({
    ...record,
    verified: outcome.status === 'verified',
    ...(outcome.error !== undefined && { error: outcome.error }),
  }));
  return { records, dkim: dkimResult.status };
}

/** `fn` over `items` with at most `limit` calls in flight; results in input order. */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  // One iterator shared by the workers: each takes the next item when it is free.
  const queue = items.entries();
  const worker = async () => {
    for (const [index, item] of queue) results[index] = await fn(item);
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(limit, 1), items.length) }, worker));
  return results;
}

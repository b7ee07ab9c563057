import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { z } from 'zod';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_DOMAIN_LENGTH = 253;

export type ParsedDomainName = { ok: true; domain: string } | { ok: false; message: string };

/** Trimmed, lower-cased, without the trailing dot, internationalised names in ASCII (punycode). */
export function normaliseDomainName(input: string): string {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  // eslint-disable-next-line no-control-regex
  return /[^\x00-\x7f]/.test(domain) ? domainToASCII(domain) : domain;
}

/**
 * Why a normalised name is not a sender domain, or undefined when it is one: at least two labels
 * of 1-63 letters, digits or hyphens (not at either end), at most 253 characters, and not an IP
 * address (a top-level label is never numeric).
 */
export function domainNameIssue(domain: string): string | undefined {
  if (isIP(domain) !== 0 || isIP(domain.replace(/^\[(.*)\]$/, '$1')) !== 0) return 'An IP address is not a domain name';
  if (domain === '') return 'Must be a domain name such as example.com';
  if (domain.length > MAX_DOMAIN_LENGTH) return `A domain name has at most ${MAX_DOMAIN_LENGTH} characters`;
  const labels = domain.split('.');
  if (labels.length < 2) return 'Must have at least two labels, such as example.com';
  if (!labels.every((label) => LABEL.test(label))) {
    return 'Each label must be 1-63 letters, digits or hyphens, and not start or end with a hyphen';
  }
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) return 'An IP address is not a domain name';
  return undefined;
}

/** {@link normaliseDomainName} then {@link domainNameIssue}, for callers outside zod (operator CLI). */
export function parseDomainName(input: string): ParsedDomainName {
  const domain = normaliseDomainName(input);
  const message = domainNameIssue(domain);
  return message === undefined ? { ok: true, domain } : { ok: false, message };
}

export const DomainName = z
  .string()
  .overwrite(normaliseDomainName)
  .superRefine((domain, ctx) => {
    const message = domainNameIssue(domain);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message, params: { code: 'invalid_string' } });
  })
  .describe('A domain name such as example.com (lower-cased; a trailing dot is dropped)');

export const CreateDomainBody = z.object({ domain: DomainName }).meta({ id: 'CreateDomainBody' });
export type CreateDomainBody = z.infer<typeof CreateDomainBody>;

export const DomainRecord = z
  .object({
    type: z.literal('TXT'),
    name: z.string().describe('Where to publish it'),
    value: z.string().describe('What to publish (DKIM: exactly this; SPF and DMARC: recommended)'),
    purpose: z.enum(['DKIM', 'SPF', 'DMARC']),
    required: z.boolean().describe('Only the DKIM record is required for verification'),
    verified: z.boolean().describe('Found by the last check'),
    error: z.string().optional().describe('Why the last check did not find it: record not found, value does not match, lookup timed out…'),
  })
  .meta({ id: 'DomainRecord' });
export type DomainRecord = z.infer<typeof DomainRecord>;

export const Domain = z
  .object({
    id: z.uuid(),
    domain: z.string(),
    projectId: z.uuid(),
    verified: z.boolean(),
    records: z.array(DomainRecord),
    verifiedAt: z.iso.datetime().nullable(),
    lastCheckedAt: z.iso.datetime().nullable().describe('Last DNS check; null on a domain an operator verified without DNS'),
    inboundEnabled: z
      .boolean()
      .describe('Mail to addresses of this domain and its subdomains is received while the domain is verified (MX to the inbound receiver): email.received events (docs/bounces.md "Inbound mail")'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Domain' });
export type Domain = z.infer<typeof Domain>;

export const UpdateDomainBody = z
  .strictObject({
    inboundEnabled: z.boolean().describe('Receive mail for this domain (and its subdomains) as email.received events'),
  })
  .meta({ id: 'UpdateDomainBody' });
export type UpdateDomainBody = z.infer<typeof UpdateDomainBody>;

export const DomainIdParams = z.object({ id: z.string() });
export const ProjectIdParams = z.object({ projectId: z.string() });

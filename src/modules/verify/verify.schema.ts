import { z } from 'zod';

/** Longest `email` accepted as input (64 + 1 + 255); anything longer is 422. */
export const MAX_EMAIL_INPUT = 320;

export const VerifyBody = z
  .object({
    email: z
      .string()
      .trim()
      .min(1)
      .max(MAX_EMAIL_INPUT)
      .pipe(z.email({ error: 'Invalid email address' }))
      .describe('The address to check (SPEC: email format). Malformed → 422; stricter checks report invalid_format'),
  })
  .meta({ id: 'VerifyBody', examples: [{ email: 'ada@example.com' }] });
export type VerifyBody = z.infer<typeof VerifyBody>;

/**
 * Machine-readable findings, in the order they are listed in `reasons` (docs/verify.md).
 * Each is stable: new ones may be added, these never change meaning.
 */
export const VERIFY_REASONS = [
  'invalid_format',
  'disposable',
  'domain_not_found',
  'no_mx_records',
  'null_mx',
  'dns_timeout',
  'dns_error',
  'possible_typo',
] as const;
export type VerifyReason = (typeof VERIFY_REASONS)[number];

export const EmailVerification = z
  .object({
    email: z.string().describe('The address checked (surrounding whitespace removed)'),
    valid: z.boolean().describe('Well-formed, not disposable, and DNS shows the domain accepts mail (MX, or A/AAAA without MX)'),
    isDisposable: z.boolean().describe('The domain (or a parent) is a throw-away mail provider'),
    isAlias: z.boolean().describe('Another form of a mailbox: plus-addressed, dots in a Gmail local part, or googlemail.com'),
    isTypo: z.boolean().describe('The domain looks misspelt; see suggestedEmail'),
    isPlusAddressed: z.boolean().describe('local+tag@domain'),
    isPersonalEmail: z.boolean().describe('A free/personal mailbox provider such as gmail.com'),
    domainExists: z.boolean().describe('DNS has MX or A/AAAA records for the domain (or its www.)'),
    hasWebsite: z.boolean().describe('The domain or www.<domain> has A/AAAA records'),
    hasMxRecords: z.boolean().describe('The domain publishes MX records (a null MX, RFC 7505, does not count)'),
    reasons: z.array(z.enum(VERIFY_REASONS)).describe('Findings; empty when nothing is wrong. A false flag next to dns_timeout/dns_error means unknown'),
    suggestedEmail: z.string().optional().describe('The corrected address when isTypo; absent otherwise'),
  })
  .meta({ id: 'EmailVerification' });
export type EmailVerification = z.infer<typeof EmailVerification>;

export const VerifyResponse = z
  .object({ success: z.literal(true), data: EmailVerification })
  .meta({
    id: 'VerifyResponse',
    examples: [
      {
        success: true,
        data: {
          email: 'ada@example.com',
          valid: false,
          isDisposable: false,
          isAlias: false,
          isTypo: false,
          isPlusAddressed: false,
          isPersonalEmail: false,
          domainExists: true,
          hasWebsite: true,
          hasMxRecords: false,
          reasons: ['null_mx'],
        },
      },
    ],
  });
export type VerifyResponse = z.infer<typeof VerifyResponse>;

import { z } from 'zod';
import { pageOf, pageQueryFields } from '../../http/paging.js';
import { HTML_DEPTH_RULE, MAX_HTML_DEPTH } from '../../mail/html-depth.js';

export const TEMPLATE_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const;
export type TemplateType = (typeof TEMPLATE_TYPES)[number];
export const TEMPLATE_SORTS = ['createdAt', 'name', 'updatedAt'] as const;
export type TemplateSort = (typeof TEMPLATE_SORTS)[number];
export const SORT_DIRS = ['desc', 'asc'] as const;
export type SortDir = (typeof SORT_DIRS)[number];

/** Field limits (docs/templates.md). Lengths count UTF-16 code units; the body limit counts UTF-8 bytes. */
export const TEMPLATE_LIMITS = {
  name: 255,
  description: 2000,
  /** As on /v1/send (SPEC Limits): a header line. */
  subject: 998,
  fromName: 255,
  /** RFC 5321 path limit. */
  email: 254,
  /** 1 MiB of HTML: far above what mail clients display unclipped (Gmail clips at ~100 KB). */
  bodyBytes: 1024 * 1024,
  search: 998,
} as const;

/** Request body limit of create and update: room for a 1 MiB body with JSON escapes, so an oversized body is a 422 on `body`. */
export const TEMPLATE_BODY_LIMIT = 4 * 1024 * 1024;

export const Template = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string().describe('Internal note, never sent'),
    subject: z.string().describe('May hold {{variables}}; filled without HTML escaping'),
    body: z.string().describe('HTML with {{variable}}, {{variable ?? fallback}} and {{{raw}}} placeholders'),
    from: z.string().describe('Sender address; its domain must be verified for the project'),
    fromName: z.string().nullable().describe('Sender display name; null when unset'),
    replyTo: z.string().nullable().describe('Reply-To address; null when unset'),
    type: z.enum(TEMPLATE_TYPES),
    projectId: z.uuid(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Template' });
export type Template = z.infer<typeof Template>;

const issue = (message: string, code: string) => ({ message, params: { code } });
const hasNul = (s: string) => s.includes('\u0000');
const hasLineBreak = (s: string) => /[\r\n]/.test(s);

/** A string of at most `max` characters; PostgreSQL text cannot hold NUL, so it is refused up front. */
const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !hasNul(s), issue('Must not contain NUL characters', 'invalid_string'));

/** A header value: no CR/LF (header injection), like subjects and header values on /v1/send. */
const headerText = (max: number, what: string) =>
  text(max).refine((s) => !hasLineBreak(s), issue(`${what} must not contain line breaks`, 'invalid_string'));

const body = z
  .string()
  .refine((s) => Buffer.byteLength(s, 'utf8') <= TEMPLATE_LIMITS.bodyBytes, issue('Body must be at most 1 MiB (UTF-8)', 'too_big'))
  .refine((s) => !hasNul(s), issue('Must not contain NUL characters', 'invalid_string'))
  .refine(HTML_DEPTH_RULE.ok, issue(HTML_DEPTH_RULE.message, HTML_DEPTH_RULE.code));

const trimmed = (v: unknown) => (typeof v === 'string' ? v.trim() : v);
const email = z.email().max(TEMPLATE_LIMITS.email);
/** null and '' (after trimming) mean "unset". */
const optionalEmail = z.preprocess((v) => {
  const s = trimmed(v);
  return s === '' ? null : s;
}, email.nullable().optional());

const fromName = z.preprocess(
  (v) => {
    const s = trimmed(v);
    return s === '' ? null : s;
  },
  headerText(TEMPLATE_LIMITS.fromName, 'Sender name').nullable().optional(),
);

const fields = {
  name: text(TEMPLATE_LIMITS.name).optional().describe(`Internal name; default ''; at most ${TEMPLATE_LIMITS.name} characters`),
  description: text(TEMPLATE_LIMITS.description).optional().describe(`Internal note; default ''`),
  subject: headerText(TEMPLATE_LIMITS.subject, 'Subject')
    .optional()
    .describe(`Default ''; at most ${TEMPLATE_LIMITS.subject} characters, no line breaks`),
  body: body.optional().describe(`HTML; default ''; at most 1 MiB, elements nested at most ${MAX_HTML_DEPTH} deep`),
  fromName: fromName.describe('Sender display name; null or empty clears it'),
  replyTo: optionalEmail.describe('Reply-To address; null or empty clears it'),
  type: z.enum(TEMPLATE_TYPES).optional(),
};

export const CreateTemplateBody = z.object({
  // Optional here so a missing (absent, null, blank) from reaches the handler, which answers the legacy 400.
  from: z
    .preprocess((v) => {
      const s = trimmed(v);
      return s === '' || s === null ? undefined : s;
    }, email.optional())
    .describe('Required: the sender address, on a domain verified for the project'),
  ...fields,
  type: fields.type.describe('Default MARKETING'),
});
export type CreateTemplateBody = z.infer<typeof CreateTemplateBody>;

export const UpdateTemplateBody = z.object({
  from: z.preprocess(trimmed, email.optional()).describe('A new address re-checks that its domain is verified'),
  ...fields,
});
export type UpdateTemplateBody = z.infer<typeof UpdateTemplateBody>;

export const TemplateIdParams = z.object({ id: z.string() });

export const ListTemplatesQuery = z.object({
  ...pageQueryFields,
  type: z.enum(TEMPLATE_TYPES).optional().describe('Only templates of this type; another value is 422'),
  search: z
    .string()
    .max(TEMPLATE_LIMITS.search)
    .optional()
    .describe('Case-insensitive substring of name, description or subject (% and _ match themselves)'),
  sort: z.enum(TEMPLATE_SORTS).catch('createdAt').default('createdAt').describe('Unrecognised values fall back to createdAt'),
  dir: z.enum(SORT_DIRS).catch('desc').default('desc').describe('Unrecognised values fall back to desc'),
});
export type ListTemplatesQuery = z.infer<typeof ListTemplatesQuery>;

export const TemplateList = pageOf(Template);
export type TemplateList = z.infer<typeof TemplateList>;

export const TemplateUsage = z.object({
  templateId: z.uuid(),
  campaigns: z
    .array(z.object({ id: z.uuid(), name: z.string(), status: z.string() }))
    .describe('Campaigns created from this template (filled once the campaigns module exists)'),
  workflows: z
    .array(
      z.object({
        id: z.uuid().describe('The workflow (as workflowId)'),
        name: z.string().describe('The workflow\'s name (as workflowName)'),
        workflowId: z.uuid(),
        workflowName: z.string(),
        stepId: z.uuid(),
        stepName: z.string().nullable(),
      }),
    )
    .describe('Workflow SEND_EMAIL steps using this template, one entry per step'),
});
export type TemplateUsage = z.infer<typeof TemplateUsage>;

export const TemplateTestBody = z.object({
  email: z
    .preprocess(trimmed, email)
    .describe('The address the test goes to (trimmed; compared in lower case with the contacts of the project)'),
  contactId: z
    .uuid()
    .optional()
    .describe(
      "Fill the template's variables with this contact's data (404 when the contact is not the project's); the email still goes to `email`. Omitted: the data of the project's contact with the address `email`, if any; otherwise variables render their fallback or empty",
    ),
});
export type TemplateTestBody = z.infer<typeof TemplateTestBody>;

export const TemplateTestAnswer = z.object({
  success: z.literal(true),
  data: z.object({
    emailId: z.uuid().describe('The test email (GET /emails/:id): source TEST, with this template as its templateId'),
    email: z.string().describe('The address, in lower case'),
    status: z.enum(['PENDING', 'CANCELLED']).describe('PENDING: queued for delivery; CANCELLED: the address is suppressed, nothing is sent (the message says why)'),
  }),
  message: z.string().describe('What happened: queued, or why the address gets nothing (suppressed)'),
});
export type TemplateTestAnswer = z.infer<typeof TemplateTestAnswer>;

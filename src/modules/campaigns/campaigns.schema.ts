import { z } from 'zod';
import { AUDIENCE_TYPES, CAMPAIGN_STATUS_REASONS, CAMPAIGN_STATUSES, EMAIL_TYPES } from '../../db/schema.js';
import { cursorLimitField, cursorListOf, pageOf, pageQueryFields } from '../../http/paging.js';
import { HTML_DEPTH_RULE } from '../../mail/html-depth.js';
import { SORT_DIRS, TEMPLATE_LIMITS } from '../templates/index.js';

export const CAMPAIGN_SORTS = ['createdAt', 'name', 'updatedAt'] as const;
export type CampaignSort = (typeof CAMPAIGN_SORTS)[number];

/** Request body limit of create and update: a 1 MiB body with JSON escapes, as for templates. */
export const CAMPAIGN_BODY_LIMIT = 4 * 1024 * 1024;

export const Campaign = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string(),
    subject: z.string().describe('May hold {{variables}}, filled per recipient at delivery'),
    body: z.string().describe('HTML with {{variable}} placeholders, filled per recipient at delivery'),
    from: z.string(),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    type: z.enum(EMAIL_TYPES),
    status: z.enum(CAMPAIGN_STATUSES),
    audienceType: z.enum(AUDIENCE_TYPES),
    audienceCondition: z.record(z.string(), z.unknown()).nullable(),
    segmentId: z.uuid().nullable(),
    scheduledFor: z.iso.datetime().nullable(),
    totalRecipients: z.int().describe('Recipients materialised when sending started'),
    sentCount: z.int().describe('Emails the relay accepted (computed from the email rows); unconfirmed ones are not included'),
    unconfirmedCount: z
      .int()
      .describe('Emails whose delivery attempt was interrupted after the message was handed over, before the relay confirmed it: not sent again, maybe not received'),
    deliveredCount: z.int(),
    openedCount: z.int(),
    clickedCount: z.int(),
    bouncedCount: z.int(),
    projectId: z.uuid(),
    startedAt: z.iso.datetime().nullable().describe('When the campaign became SENDING (its first emails went out); null before'),
    sentAt: z.iso.datetime().nullable().describe('When the campaign reached SENT'),
    cancelledAt: z.iso.datetime().nullable().describe('When the campaign reached CANCELLED'),
    statusReason: z
      .object({
        code: z.enum(CAMPAIGN_STATUS_REASONS),
        message: z.string(),
      })
      .nullable()
      .describe(
        'Why the campaign is CANCELLED: CANCELLED_BY_USER (POST /cancel), AUDIENCE_UNUSABLE (its stored audience cannot be evaluated), START_FAILED (sending could not start after bounded retries), BILLING_LIMIT_REACHED (a monthly billing cap refused its emails when they were materialised); null otherwise',
      ),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Campaign' });
export type Campaign = z.infer<typeof Campaign>;

const issue = (message: string, code: string) => ({ message, params: { code } });
const noNul = (s: string) => !s.includes('\u0000');
const text = (max: number) => z.string().max(max).refine(noNul, issue('Must not contain NUL characters', 'invalid_string'));
const headerText = (max: number) => text(max).refine((s) => !/[\r\n]/.test(s), issue('Must not contain line breaks', 'invalid_string'));
const blankToNull = (v: unknown) => {
  const s = typeof v === 'string' ? v.trim() : v;
  return s === '' ? null : s;
};
const email = z.email().max(TEMPLATE_LIMITS.email);

const fields = {
  name: text(TEMPLATE_LIMITS.name).optional(),
  description: text(TEMPLATE_LIMITS.description).optional(),
  subject: headerText(TEMPLATE_LIMITS.subject).optional(),
  body: z
    .string()
    .refine((s) => Buffer.byteLength(s, 'utf8') <= TEMPLATE_LIMITS.bodyBytes, issue('Body must be at most 1 MiB (UTF-8)', 'too_big'))
    .refine(noNul, issue('Must not contain NUL characters', 'invalid_string'))
    .refine(HTML_DEPTH_RULE.ok, issue(HTML_DEPTH_RULE.message, HTML_DEPTH_RULE.code))
    .optional(),
  fromName: z.preprocess(blankToNull, headerText(TEMPLATE_LIMITS.fromName).nullable().optional()),
  replyTo: z.preprocess(blankToNull, email.nullable().optional()),
  type: z.enum(EMAIL_TYPES).optional().describe('Default MARKETING'),
  audienceType: z.enum(AUDIENCE_TYPES).optional().describe('Default ALL'),
  segmentId: z.uuid().nullable().optional().describe('Required for SEGMENT: a segment of the project'),
  audienceCondition: z.unknown().optional().describe('Required for FILTERED: a condition tree'),
};

export const CreateCampaignBody = z.object({
  from: z.preprocess((v) => (typeof v === 'string' ? v.trim() : v), email).describe('Sender; its domain must be verified'),
  ...fields,
});
export type CreateCampaignBody = z.infer<typeof CreateCampaignBody>;

export const AudienceCountBody = z.object({
  type: z.enum(EMAIL_TYPES).optional().describe('Default MARKETING (subscribed contacts only)'),
  audienceType: z.enum(AUDIENCE_TYPES).describe('ALL, SEGMENT (with segmentId) or FILTERED (with audienceCondition)'),
  segmentId: z.uuid().nullable().optional().describe('Required for SEGMENT: a segment of the project'),
  audienceCondition: z.unknown().optional().describe('Required for FILTERED: a condition tree'),
});
export type AudienceCountBody = z.infer<typeof AudienceCountBody>;

export const AudienceCount = z
  .object({ count: z.int().describe('Emails a campaign with this audience would queue if sent now: its contacts (MARKETING: subscribed) less suppressed addresses') })
  .meta({ id: 'CampaignAudienceCount' });
export type AudienceCount = z.infer<typeof AudienceCount>;

export const UpdateCampaignBody = z.object({
  from: z.preprocess((v) => (typeof v === 'string' ? v.trim() : v), email.optional()),
  ...fields,
});
export type UpdateCampaignBody = z.infer<typeof UpdateCampaignBody>;

export const CampaignIdParams = z.object({ id: z.string() });

export const ListCampaignsQuery = z.object({
  ...pageQueryFields,
  // Checked by the service: an unrecognised value is a 400 (SPEC), not a 422.
  status: z.string().optional().describe(`One of ${CAMPAIGN_STATUSES.join(', ')}; another value is 400`),
  search: z.string().max(TEMPLATE_LIMITS.search).optional().describe('Case-insensitive substring of name, subject or sender address'),
  sort: z.enum(CAMPAIGN_SORTS).catch('createdAt').default('createdAt'),
  dir: z.enum(SORT_DIRS).catch('desc').default('desc'),
});
export type ListCampaignsQuery = z.infer<typeof ListCampaignsQuery>;

export const CampaignList = pageOf(Campaign);
export type CampaignList = z.infer<typeof CampaignList>;

export const WrappedCampaign = z.object({ success: z.literal(true), data: Campaign });

export const SendCampaignBody = z
  .object({ scheduledFor: z.unknown().optional().describe('ISO 8601 date-time with Z or an offset (or the HTTP date form, e.g. "Tue, 01 Dec 2026 09:00:00 GMT"); omitted or null sends now; anything else, impossible dates included, is 400') })
  .nullish();

export const SendCampaignAnswer = z.object({
  success: z.literal(true),
  data: z.object({ id: z.uuid(), name: z.string(), status: z.enum(CAMPAIGN_STATUSES), scheduledFor: z.iso.datetime().nullable() }),
  message: z.string(),
});
export type SendCampaignAnswer = z.infer<typeof SendCampaignAnswer>;

export const TestSendBody = z.object({ email: z.preprocess((v) => (typeof v === 'string' ? v.trim() : v), email) });

export const TestSendAnswer = z.object({
  success: z.literal(true),
  data: z.object({ emailId: z.uuid(), email: z.string() }),
  message: z.string(),
});
export type TestSendAnswer = z.infer<typeof TestSendAnswer>;

export const CampaignStats = z.object({
  total: z.int(),
  pending: z.int().describe('Not yet handed to the relay (PENDING or SENDING)'),
  sent: z.int().describe('Accepted by the relay; unconfirmed ones not included'),
  unconfirmed: z.int().describe('Interrupted after the message was handed over, before the relay confirmed it: not sent again, maybe not received'),
  delivered: z.int(),
  opened: z.int(),
  clicked: z.int(),
  bounced: z.int(),
  complained: z.int(),
  failed: z.int(),
  cancelled: z.int(),
  deliveryRate: z.number().describe('delivered / sent; 0 when nothing was sent. Once finished, total = sent + unconfirmed + failed + cancelled'),
  openRate: z.number(),
  clickRate: z.number(),
  bounceRate: z.number(),
  complaintRate: z.number(),
});
export type CampaignStats = z.infer<typeof CampaignStats>;

// The campaign page's insight (docs/campaigns.md "Insight").

export { TimeseriesQuery as CampaignTimeseriesQuery } from '../analytics/index.js';

export const CampaignTimeseries = z
  .object({
    startDate: z.iso.datetime().describe('First instant counted (the first point\'s start)'),
    endDate: z.iso.datetime().describe('End of the range (excluded)'),
    tz: z.string(),
    interval: z.enum(['hour', 'day']),
    data: z.array(
      z.object({
        date: z.string().describe('Day points: the local date (YYYY-MM-DD); hour points: the hour\'s first instant (ISO 8601, UTC)'),
        delivered: z.int().describe('Emails of the campaign delivered in this period'),
        opened: z.int().describe('Emails opened for the first time by a person in this period (machine opens excluded; a click implies an open)'),
        clicked: z.int().describe('Emails clicked for the first time in this period'),
        bounced: z.int(),
        complained: z.int(),
      }),
    ).describe('One point per local hour or day touching the range, zero-filled; empty for a campaign never sent (without startDate)'),
  })
  .meta({ id: 'CampaignTimeseries' });
export type CampaignTimeseries = z.infer<typeof CampaignTimeseries>;

export const CampaignLinksQuery = z.object({
  limit: z.coerce.number().int().min(1).default(10).transform((n) => Math.min(n, 100)).describe('Default 10; 1 or more, larger than 100 is clamped'),
});
export type CampaignLinksQuery = z.infer<typeof CampaignLinksQuery>;

export const CampaignLinks = z
  .object({
    data: z.array(
      z.object({
        url: z.string().describe('The link\'s target as clicked (the tracked URL\'s destination)'),
        clicks: z.int().describe('Every click of the URL, repeated ones included'),
        uniqueClicks: z.int().describe('Emails whose recipient clicked the URL at least once'),
      }),
    ).describe('Most clicked first (clicks, then unique clicks, then URL)'),
    clickedEmails: z.int().describe('Emails of the campaign clicked at least once (any URL): the denominator of a link\'s share of clickers'),
  })
  .meta({ id: 'CampaignLinks' });
export type CampaignLinks = z.infer<typeof CampaignLinks>;

export const CampaignBouncesQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The `cursor` of the previous page; empty or omitted: the first page'),
});
export type CampaignBouncesQuery = z.infer<typeof CampaignBouncesQuery>;

export const CampaignBounce = z
  .object({
    emailId: z.uuid(),
    toEmail: z.string().describe('The address the email was sent to'),
    contact: z.object({ id: z.uuid(), email: z.string() }).nullable().describe('The contact, null when it was deleted'),
    status: z.enum(['BOUNCED', 'COMPLAINED']),
    bounceType: z.string().nullable().describe('As the relay reported it (SES: Permanent), when recorded'),
    bounceSubType: z.string().nullable().describe('As the relay reported it (SES: General, NoEmail, Suppressed…), when recorded'),
    reason: z.string().nullable().describe("The bounce's diagnostic code, or the complaint's feedback type, when recorded"),
    at: z.iso.datetime().describe('When the email bounced, or for COMPLAINED when the complaint came'),
  })
  .meta({ id: 'CampaignBounce' });
export type CampaignBounce = z.infer<typeof CampaignBounce>;

export const CampaignBounceList = cursorListOf(CampaignBounce)
  .extend({ total: z.int().describe('Bounced and complained emails of the campaign, on the first page (no cursor); 0 on later pages') })
  .meta({ id: 'CampaignBounceList' });
export type CampaignBounceList = z.infer<typeof CampaignBounceList>;

import { z } from 'zod';
import { cursorLimitField, cursorListOf } from '../../http/paging.js';
import { DATE_FORMS_HINT, parseDate } from '../../lib/dates.js';
import { ACTIVITY_TYPES, type ActivityType, isActivityType } from './activity.rules.js';

/** Most days GET /activity/upcoming looks ahead. */
export const MAX_DAYS_AHEAD = 90;
/** Most minutes GET /activity/recent-count looks back. */
export const MAX_RECENT_MINUTES = 60;

const TYPE_LIST = ACTIVITY_TYPES.join(', ');

/** An optional API date (lib/dates.ts: ISO date, or date-time with Z or an offset). */
const dateField = (what: string) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      const date = parseDate(value);
      if (!date) {
        ctx.addIssue({ code: 'custom', message: `Expected ${DATE_FORMS_HINT}`, params: { code: 'invalid_string' } });
        return z.NEVER;
      }
      return date;
    })
    .describe(what);

/** `types`: a comma list of activity types; an unknown one is a 422 naming the allowed ones. */
const typesField = z
  .string()
  .optional()
  .transform((value, ctx): ActivityType[] | undefined => {
    if (value === undefined) return undefined;
    const given = [...new Set(value.split(',').map((t) => t.trim()).filter((t) => t !== ''))];
    const unknown = given.filter((t) => !isActivityType(t));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `Unknown activity type${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => JSON.stringify(t)).join(', ')}; allowed: ${TYPE_LIST}`,
        params: { code: 'invalid_enum_value' },
      });
      return z.NEVER;
    }
    return given.length > 0 ? given.filter(isActivityType) : undefined;
  })
  .describe(`Comma list of types (${TYPE_LIST}); default every type`);

export const ActivityQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The `cursor` of the previous page'),
  types: typesField,
  contactId: z.uuid().optional().describe("Only this contact's activity (campaign items have no contact: left out)"),
  startDate: dateField('Window start (inclusive); default 30 days before endDate'),
  endDate: dateField('Window end (inclusive); default now'),
});
export type ActivityQuery = z.infer<typeof ActivityQuery>;

const ContactRef = z.object({ id: z.uuid(), email: z.string() });

export const ActivityItem = z
  .object({
    id: z.string().describe("The event's id; for campaign and workflow items `<campaign or execution id>:<moment>`"),
    type: z.enum(ACTIVITY_TYPES),
    timestamp: z.iso.datetime(),
    contact: ContactRef.optional().describe('The contact of the item (absent on campaign items)'),
    metadata: z
      .record(z.string(), z.unknown())
      .describe('Per type (docs/activity.md): campaign, workflow, template {id, name}, subject, url, emailId, segment, event name and data…'),
  })
  .meta({ id: 'ActivityItem' });
export type ActivityItem = z.infer<typeof ActivityItem>;

export const ActivityList = cursorListOf(ActivityItem)
  .extend({
    total: z.int().describe('First page only (0 on later pages): the matching items, counted up to 10,000'),
    totalCapped: z.boolean().describe('True when more than 10,000 items match (total then says 10,000)'),
  })
  .meta({ id: 'ActivityList' });
export type ActivityList = z.infer<typeof ActivityList>;

export const RecentCountQuery = z.object({
  minutes: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_RECENT_MINUTES)
    .default(5)
    .describe(`Look-back in minutes, 1 to ${MAX_RECENT_MINUTES}; default 5`),
});

export const RecentCount = z
  .object({
    count: z.int().describe('Activity items (every type) with a timestamp in the last `minutes` minutes'),
    minutes: z.int(),
    since: z.iso.datetime(),
  })
  .meta({ id: 'ActivityRecentCount' });
export type RecentCount = z.infer<typeof RecentCount>;

export const ActivityTypes = z
  .object({
    data: z.array(
      z.object({
        type: z.enum(ACTIVITY_TYPES),
        source: z.enum(['events', 'campaigns', 'workflows']),
        available: z.boolean().describe('The project has at least one item of this type (any time)'),
      }),
    ),
  })
  .meta({ id: 'ActivityTypes' });
export type ActivityTypes = z.infer<typeof ActivityTypes>;

export const UpcomingQuery = z.object({
  limit: cursorLimitField(),
  daysAhead: z.coerce
    .number()
    .int()
    .min(1)
    .default(7)
    .transform((n) => Math.min(n, MAX_DAYS_AHEAD))
    .describe(`1 or more; default 7; values over ${MAX_DAYS_AHEAD} are clamped`),
});

const Ref = z.object({ id: z.uuid(), name: z.string() });

export const UpcomingItem = z
  .object({
    type: z.enum(['campaign.scheduled', 'workflow.step']),
    dueAt: z.iso.datetime(),
    campaign: Ref.extend({ subject: z.string() }).optional(),
    workflow: Ref.optional(),
    step: Ref.extend({ type: z.string() }).optional().describe('DELAY (its end) or WAIT_FOR_EVENT (its timeout)'),
    execution: z.object({ id: z.uuid(), waitingFor: z.string().optional().describe('WAIT_FOR_EVENT: the awaited event name') }).optional(),
    contact: ContactRef.optional(),
  })
  .meta({ id: 'UpcomingItem' });
export type UpcomingItem = z.infer<typeof UpcomingItem>;

export const Upcoming = z
  .object({
    data: z.array(UpcomingItem),
    hasMore: z.boolean().describe('More is due within the window than `limit`'),
    until: z.iso.datetime().describe('End of the window: now + daysAhead'),
  })
  .meta({ id: 'ActivityUpcoming' });
export type Upcoming = z.infer<typeof Upcoming>;

import { z } from 'zod';
import { RequestDataInput } from '../contacts/index.js';
import { isReservedEventName, RESERVED_EVENT_CODE, RESERVED_EVENT_MESSAGE } from './event-names.js';

/** PostgreSQL text cannot hold NUL: refused up front rather than failing a whole batch. */
const hasNul = (s: string) => s.includes('\u0000');

const EventName = z
  .string()
  .min(1)
  .max(255)
  .superRefine((name, ctx) => {
    if (name.length === 0 || name.length > 255) return; // reported by min/max
    if (name.trim() === '') ctx.addIssue({ code: 'custom', message: 'Event name must not be blank', params: { code: 'too_small' } });
    else if (hasNul(name)) ctx.addIssue({ code: 'custom', message: 'Event name must not contain NUL characters', params: { code: 'invalid_string' } });
    else if (isReservedEventName(name)) ctx.addIssue({ code: 'custom', message: RESERVED_EVENT_MESSAGE, params: { code: RESERVED_EVENT_CODE } });
  })
  .describe('Any name except the reserved email.*, contact.subscribed, contact.unsubscribed, segment.<slug>.entry/exit');

export const TrackBody = z
  .object({
    email: z.email().describe('The contact; created when new'),
    event: EventName,
    subscribed: z
      .boolean()
      .optional()
      .describe('New contacts default to true; existing ones keep their state unless given; a change records contact.subscribed/unsubscribed'),
    data: RequestDataInput.optional(),
  })
  .superRefine((body, ctx) => {
    for (const [key, raw] of Object.entries(body.data ?? {})) {
      const value = raw !== null && typeof raw === 'object' ? raw.value : raw;
      if (hasNul(key) || (typeof value === 'string' && hasNul(value))) {
        ctx.addIssue({ code: 'custom', path: ['data', key], message: 'Data must not contain NUL characters', params: { code: 'invalid_string' } });
      }
    }
  })
  .meta({
    id: 'TrackBody',
    examples: [{ email: 'ada@example.com', event: 'signed_up', data: { plan: 'pro' } }],
  });
export type TrackBody = z.infer<typeof TrackBody>;

export const TrackResponse = z
  .object({
    success: z.literal(true),
    data: z.object({
      contact: z.uuid().describe('Id of the contact'),
      event: z.uuid().describe('Id of the recorded event'),
      timestamp: z.iso.datetime().describe('When the event was recorded'),
    }),
  })
  .meta({
    id: 'TrackResponse',
    examples: [
      {
        success: true,
        data: {
          contact: '0b8f5f0e-2c1d-4c43-9a57-3c2a4f1d7e10',
          event: '3d4e5f60-7182-4a93-8b4c-5d6e7f809a1b',
          timestamp: '2026-01-01T12:00:00.000Z',
        },
      },
    ],
  });
export type TrackResponse = z.infer<typeof TrackResponse>;

export const Event = z
  .object({
    id: z.uuid(),
    contactId: z.uuid(),
    email: z.string(),
    name: z.string(),
    data: z.record(z.string(), z.unknown()).describe('Values sent with the event (stored and one-off)'),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'Event' });
export type Event = z.infer<typeof Event>;

export const EventList = z
  .object({
    data: z.array(Event),
    cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
    hasMore: z.boolean(),
    total: z.number().int().describe('Events matching the filters; only on the first page (0 on later pages)'),
  })
  .meta({ id: 'EventList' });
export type EventList = z.infer<typeof EventList>;

/** Cursor-list limit: default 20, at least 1, larger values clamped to 100. */
const limit = z.coerce.number().int().min(1).default(20).transform((n) => Math.min(n, 100));

export const ListEventsQuery = z.object({
  limit,
  cursor: z.string().optional().describe('The `cursor` of the previous page'),
  name: z.string().min(1).max(255).optional().describe('Only events with this name'),
  contactId: z.uuid().optional().describe('Only events of this contact'),
});
export type ListEventsQuery = z.infer<typeof ListEventsQuery>;

export const ContactEventsQuery = ListEventsQuery.omit({ contactId: true });
export const ContactIdParams = z.object({ contactId: z.string() });
export const EventNameParams = z.object({ eventName: z.string().min(1) });

export const EventNames = z
  .object({
    data: z.array(
      z.object({
        name: z.string(),
        count: z.number().int(),
        lastSeenAt: z.iso.datetime(),
        system: z.boolean().describe('Recorded by the service itself (email.*, contact.subscribed/unsubscribed, segment entry/exit)'),
      }),
    ),
  })
  .meta({ id: 'EventNames' });
export type EventNames = z.infer<typeof EventNames>;

/** Daily series length: at least 1, larger values clamped to 365. */
export const MAX_STATS_DAYS = 365;

export const StatsQuery = z.object({
  days: z.coerce
    .number()
    .int()
    .min(1)
    .transform((n) => Math.min(n, MAX_STATS_DAYS))
    .optional()
    .describe('Adds a zero-filled daily series of the last N UTC days (today included) to each name; at most 365'),
  name: z.string().min(1).max(255).optional().describe('Only this name'),
});
export type StatsQuery = z.infer<typeof StatsQuery>;

export const EventStats = z
  .object({
    data: z.array(
      z.object({
        name: z.string(),
        system: z.boolean(),
        last24h: z.number().int(),
        last7d: z.number().int(),
        last30d: z.number().int(),
        total: z.number().int(),
        daily: z
          .array(z.object({ date: z.iso.date(), count: z.number().int() }))
          .optional()
          .describe('With `days`: one entry per UTC day, oldest first'),
      }),
    ),
  })
  .meta({ id: 'EventStats' });
export type EventStats = z.infer<typeof EventStats>;

const Reference = z.object({ id: z.uuid(), name: z.string() });

export const EventUsage = z
  .object({
    eventName: z.string(),
    segments: z.array(Reference).describe('Segments whose condition uses the event'),
    campaigns: z.array(Reference).describe('Campaigns whose audience condition uses the event'),
    workflows: z.array(Reference).describe('Workflows triggered by or waiting for the event'),
  })
  .meta({ id: 'EventUsage' });
export type EventUsage = z.infer<typeof EventUsage>;

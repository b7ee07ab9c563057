import { validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';

/**
 * The activity types (docs/activity.md), the same names webhooks and the dashboard use: the
 * event's own name for the email lifecycle and subscription events, then one type per kind of
 * event, campaign moment and workflow execution moment.
 */
export const EMAIL_EVENT_TYPES = ['email.sent', 'email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received'] as const;
export const CONTACT_EVENT_TYPES = ['contact.subscribed', 'contact.unsubscribed'] as const;
export const ACTIVITY_TYPES = [
  ...EMAIL_EVENT_TYPES,
  ...CONTACT_EVENT_TYPES,
  'segment.entry',
  'segment.exit',
  'event.tracked',
  'campaign.scheduled',
  'campaign.sent',
  'workflow.started',
  'workflow.completed',
  'workflow.failed',
] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

/** Types whose items are rows of `events`, recorded under exactly this name. */
export const NAMED_EVENT_TYPES: ReadonlySet<string> = new Set<string>([...EMAIL_EVENT_TYPES, ...CONTACT_EVENT_TYPES]);
/** Types whose items are rows of `events` under names found in the project (segment slugs, tracked names). */
export const PATTERN_EVENT_TYPES = ['segment.entry', 'segment.exit', 'event.tracked'] as const;

export const isActivityType = (value: string): value is ActivityType => (ACTIVITY_TYPES as readonly string[]).includes(value);

const SEGMENT_EVENT = /^segment\..+\.(entry|exit)$/;

/**
 * The type of an event row by its name. Exact names: the service stores its own names
 * lower-case and POST /v1/track refuses every reserved name in any case, so a tracked event
 * never looks like a system one.
 */
export function typeOfEventName(name: string): ActivityType {
  if (NAMED_EVENT_TYPES.has(name) && isActivityType(name)) return name;
  const segment = SEGMENT_EVENT.exec(name);
  if (segment) return segment[1] === 'entry' ? 'segment.entry' : 'segment.exit';
  return 'event.tracked';
}

/**
 * Sources of the feed, in the order items of one instant are listed (newest first, so a
 * higher rank first): an execution that ends in the instant it started lists its end first.
 * The rank is the middle key of the keyset (timestamp, rank, id).
 */
export const SourceRank = {
  event: 1,
  campaignScheduled: 2,
  campaignSent: 3,
  workflowStarted: 4,
  workflowEnded: 5,
} as const;
export type SourceRank = (typeof SourceRank)[keyof typeof SourceRank];
const RANKS: readonly SourceRank[] = Object.values(SourceRank);
const rankOf = (text: string | undefined): SourceRank | undefined => RANKS.find((r) => String(r) === text);

/** The keyset position of an item: its timestamp with microseconds (UTC text), source rank and row id. */
export interface FeedPosition {
  at: string;
  rank: SourceRank;
  id: string;
}

/** What a cursor carries: the last item's position, and the window floor the first page used. */
export interface FeedCursor {
  after: FeedPosition;
  /** Microsecond UTC text of the window's start, so later pages of a defaulted window keep it. */
  start: string;
}

const MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** The calendar date and time exist (PostgreSQL would refuse 2026-02-30 with an error). */
function isRealInstant(at: string): boolean {
  if (!MICROS.test(at)) return false;
  const millis = at.slice(0, 23);
  const parsed = new Date(`${millis}Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 23) === millis;
}

/** Opaque cursor: base64url of `<at>|<rank>|<id>|<start>`. */
export function encodeCursor(cursor: FeedCursor): string {
  const { at, rank, id } = cursor.after;
  return Buffer.from(`${at}|${rank}|${id}|${cursor.start}`).toString('base64url');
}

export function decodeCursor(cursor: string): FeedCursor {
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const [at, rankText, id, start] = parts;
  const rank = rankOf(rankText);
  if (
    parts.length !== 4 ||
    at === undefined ||
    id === undefined ||
    start === undefined ||
    !isRealInstant(at) ||
    !isRealInstant(start) ||
    rank === undefined ||
    !isUuid(id)
  ) {
    throw validationError([{ field: 'cursor', code: 'invalid_string', message: 'Invalid cursor: pass the cursor of a previous page' }]);
  }
  return { after: { at, rank, id: id.toLowerCase() }, start };
}

/** A Date as the microsecond UTC text positions use (a Date has milliseconds: the rest is zeros). */
export const microsOf = (date: Date): string => `${date.toISOString().slice(0, 23)}000Z`;

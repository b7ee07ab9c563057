import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';
import { findPresence, findUpcoming } from './activity.repo.js';
import {
  ACTIVITY_TYPES,
  type ActivityType,
  decodeCursor,
  encodeCursor,
  microsOf,
  NAMED_EVENT_TYPES,
  PATTERN_EVENT_TYPES,
  typeOfEventName,
} from './activity.rules.js';
import type { ActivityList, ActivityQuery, ActivityTypes, RecentCount, Upcoming, UpcomingItem } from './activity.schema.js';
import { countFeed, distinctEventNames, type EventSelection, type FeedQuery, readFeedPage } from './feed.repo.js';
import { rowToItem } from './items.js';

/** Default window: the 30 days before `endDate`. */
export const DEFAULT_WINDOW_DAYS = 30;
/** The first page's `total` is counted up to this many items. */
export const TOTAL_CAP = 10_000;
/** Distinct event names read to resolve segment and tracked types; past it, one filtered scan. */
export const MAX_EVENT_NAMES = 2_000;
/** Names read with one index subquery each; more, and the feed scans events by time instead. */
export const MAX_NAME_SUBQUERIES = 64;

const DAY_MS = 86_400_000;

type Project = { db: Kysely<Database>; projectId: string };

/** How the wanted types read `events`: by name where the names are known and few. */
async function eventSelection({ db, projectId }: Project, types: readonly ActivityType[] | undefined): Promise<EventSelection> {
  if (!types) return { kind: 'all' };
  const wanted = types.filter((t) => NAMED_EVENT_TYPES.has(t) || (PATTERN_EVENT_TYPES as readonly string[]).includes(t));
  if (wanted.length === 0) return { kind: 'none' };
  const names: string[] = wanted.filter((t) => NAMED_EVENT_TYPES.has(t));
  if (names.length < wanted.length) {
    const found = await distinctEventNames(db, projectId, MAX_EVENT_NAMES + 1);
    if (found.length > MAX_EVENT_NAMES) return { kind: 'types', types: wanted };
    names.push(...found.filter((n) => !NAMED_EVENT_TYPES.has(n) && wanted.includes(typeOfEventName(n))));
  }
  return names.length > MAX_NAME_SUBQUERIES ? { kind: 'types', types: wanted } : { kind: 'names', names };
}

function resolveWindow(query: ActivityQuery, cursorStart: string | undefined): { start: string; end: string } {
  const end = query.endDate ?? new Date();
  const start = query.startDate ? microsOf(query.startDate) : (cursorStart ?? microsOf(new Date(end.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS)));
  if (end.getTime() < new Date(start).getTime()) {
    throw validationError([{ field: query.endDate ? 'endDate' : 'startDate', code: 'too_small', message: 'endDate must not be before startDate' }]);
  }
  return { start, end: microsOf(end) };
}

/** GET /activity: a cursor page of the feed, newest first (docs/activity.md). */
export async function listActivity(db: Kysely<Database>, projectId: string, query: ActivityQuery): Promise<ActivityList> {
  const cursor = query.cursor ? decodeCursor(query.cursor) : undefined;
  const window = resolveWindow(query, cursor?.start);
  const wanted = new Set<ActivityType>(query.types ?? ACTIVITY_TYPES);
  const feed: FeedQuery = {
    projectId,
    ...window,
    contactId: query.contactId,
    after: cursor?.after,
    limit: query.limit + 1,
    events: await eventSelection({ db, projectId }, query.types),
    // Campaign items concern no contact: a contact's feed has none.
    campaigns: { scheduled: !query.contactId && wanted.has('campaign.scheduled'), sent: !query.contactId && wanted.has('campaign.sent') },
    workflows: { started: wanted.has('workflow.started'), completed: wanted.has('workflow.completed'), failed: wanted.has('workflow.failed') },
  };
  const [rows, counted] = await Promise.all([readFeedPage(db, feed), cursor ? 0 : countFeed(db, feed, TOTAL_CAP)]);
  const hasMore = rows.length > query.limit;
  const page = hasMore ? rows.slice(0, query.limit) : rows;
  const last = page.at(-1);
  return {
    data: page.map(rowToItem),
    cursor: hasMore && last ? encodeCursor({ after: { at: last.position_at, rank: last.rank, id: last.id }, start: window.start }) : null,
    hasMore,
    total: Math.min(counted, TOTAL_CAP),
    totalCapped: counted > TOTAL_CAP,
  };
}

/** GET /activity/recent-count: every item of the last `minutes` minutes, counted exactly. */
export async function recentActivityCount(db: Kysely<Database>, projectId: string, minutes: number): Promise<RecentCount> {
  const now = new Date();
  const since = new Date(now.getTime() - minutes * 60_000);
  const count = await countFeed(db, {
    projectId,
    start: microsOf(since),
    end: microsOf(now),
    limit: 0,
    events: { kind: 'all' },
    campaigns: { scheduled: true, sent: true },
    workflows: { started: true, completed: true, failed: true },
  });
  return { count, minutes, since: since.toISOString() };
}

const sourceOf = (type: ActivityType) => (type.startsWith('campaign.') ? 'campaigns' : type.startsWith('workflow.') ? 'workflows' : 'events');

/** GET /activity/types: every type, with whether the project has any item of it. */
export async function activityTypes(db: Kysely<Database>, projectId: string): Promise<ActivityTypes> {
  const [presence, names] = await Promise.all([findPresence(db, projectId), distinctEventNames(db, projectId, MAX_EVENT_NAMES + 1)]);
  const seen = new Set(names.map(typeOfEventName));
  // Past the name cap the scan stopped early: a segment or tracked type not seen yet may exist.
  if (names.length > MAX_EVENT_NAMES) for (const t of PATTERN_EVENT_TYPES) seen.add(t);
  const notEvents: Partial<Record<ActivityType, boolean>> = {
    'campaign.scheduled': presence.campaign_scheduled,
    'campaign.sent': presence.campaign_sent,
    'workflow.started': presence.workflow_started,
    'workflow.completed': presence.workflow_completed,
    'workflow.failed': presence.workflow_failed,
  };
  return {
    data: ACTIVITY_TYPES.map((type) => ({
      type,
      source: sourceOf(type),
      available: notEvents[type] ?? (presence.names[type] === true || seen.has(type)),
    })),
  };
}

/** GET /activity/upcoming: what is due in the next `daysAhead` days, soonest first. */
export async function upcomingActivity(db: Kysely<Database>, projectId: string, query: { limit: number; daysAhead: number }): Promise<Upcoming> {
  const horizon = new Date(Date.now() + query.daysAhead * DAY_MS);
  const rows = await findUpcoming(db, projectId, { horizon, limit: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  return {
    data: page.map((r): UpcomingItem => {
      const contact = r.contact_id && r.contact_email ? { contact: { id: r.contact_id, email: r.contact_email } } : {};
      if (r.kind === 'campaign') {
        return { type: 'campaign.scheduled', dueAt: r.due_at.toISOString(), campaign: { id: r.id, name: r.campaign_name ?? '', subject: r.campaign_subject ?? '' } };
      }
      return {
        type: 'workflow.step',
        dueAt: r.due_at.toISOString(),
        ...(r.workflow_id && { workflow: { id: r.workflow_id, name: r.workflow_name ?? '' } }),
        ...(r.step_id && { step: { id: r.step_id, name: r.step_name ?? '', type: r.step_type ?? '' } }),
        ...(r.execution_id && { execution: { id: r.execution_id, ...(r.wait_event && { waitingFor: r.wait_event }) } }),
        ...contact,
      };
    }),
    hasMore: rows.length > query.limit,
    until: horizon.toISOString(),
  };
}

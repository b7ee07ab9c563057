import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { notFound, validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { uncountEvents } from '../analytics/index.js';
import { campaignsUsing } from '../campaigns/index.js';
import { segmentsReferencingField } from '../segments/index.js';
import { workflowsUsingEvent } from '../workflows/index.js';
import { isProtectedEventName, isSystemEventName, RESERVED_EVENT_CODE } from './event-names.js';
import {
  contactExists,
  countEvents,
  deleteEventsByName,
  type EventFilter,
  type EventListRow,
  type EventPosition,
  eventStats,
  listEventNames,
  listEvents,
} from './events.repo.js';
import type { Event, EventList, EventNames, EventStats, EventUsage } from './events.schema.js';

const POSITION_AT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** Opaque cursor: base64url of `<created_at with microseconds>|<id>` of the page's last row. */
export function encodeCursor(position: EventPosition): string {
  return Buffer.from(`${position.at}|${position.id}`).toString('base64url');
}

export function decodeCursor(cursor: string): EventPosition {
  const [at, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (at === undefined || id === undefined || extra !== undefined || !POSITION_AT.test(at) || !isUuid(id) || !isRealInstant(at)) {
    throw validationError([{ field: 'cursor', code: 'invalid_string', message: 'Invalid cursor: pass the cursor of a previous page' }]);
  }
  return { at, id };
}

/** The calendar date and time exist (PostgreSQL would refuse 2026-02-30 with an error). */
function isRealInstant(at: string): boolean {
  const millis = at.slice(0, 23);
  const parsed = new Date(`${millis}Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 23) === millis;
}

export function rowToEvent(row: EventListRow): Event {
  return {
    id: row.id,
    contactId: row.contact_id,
    email: row.email,
    name: row.name,
    data: row.data,
    createdAt: row.created_at.toISOString(),
  };
}

/** A cursor list page of events, newest first; `total` only on the first page. */
export async function listProjectEvents(
  db: Kysely<Database>,
  projectId: string,
  query: { limit: number; cursor?: string | undefined; filter: EventFilter },
): Promise<EventList> {
  const after = query.cursor ? decodeCursor(query.cursor) : undefined;
  const [rows, total] = await Promise.all([
    listEvents(db, projectId, { filter: query.filter, limit: query.limit + 1, after }),
    after ? 0 : countEvents(db, projectId, query.filter),
  ]);
  const hasMore = rows.length > query.limit;
  const page = hasMore ? rows.slice(0, query.limit) : rows;
  const last = page.at(-1);
  return {
    data: page.map(rowToEvent),
    cursor: hasMore && last ? encodeCursor({ at: last.position_at, id: last.id }) : null,
    hasMore,
    total,
  };
}

/** Events of one contact of the project; 404 when the contact is not in the project. */
export async function listContactEvents(
  db: Kysely<Database>,
  projectId: string,
  contactId: string,
  query: { limit: number; cursor?: string | undefined; name?: string | undefined },
): Promise<EventList> {
  if (!isUuid(contactId) || !(await contactExists(db, projectId, contactId))) throw notFound('Contact');
  return listProjectEvents(db, projectId, { limit: query.limit, cursor: query.cursor, filter: { contactId, name: query.name } });
}

export async function projectEventNames(db: Kysely<Database>, projectId: string): Promise<EventNames> {
  const rows = await listEventNames(db, projectId);
  return {
    data: rows.map((r) => ({ name: r.name, count: r.count, lastSeenAt: r.last_seen_at.toISOString(), system: isSystemEventName(r.name) })),
  };
}

export async function projectEventStats(db: Kysely<Database>, projectId: string, query: { days?: number; name?: string }): Promise<EventStats> {
  const rows = await eventStats(db, projectId, query);
  return {
    data: rows.map((r) => ({
      name: r.name,
      system: isSystemEventName(r.name),
      last24h: r.last24h,
      last7d: r.last7d,
      last30d: r.last30d,
      total: r.total,
      ...(r.daily && { daily: r.daily }),
    })),
  };
}

/**
 * Where an event name is referenced: segments (conditions on `event.<name>`) and campaigns
 * (audience conditions), workflows (EVENT trigger, WAIT_FOR_EVENT steps, CONDITION steps on the
 * tracked event).
 */
export async function eventNameUsage(db: Kysely<Database>, projectId: string, eventName: string): Promise<EventUsage> {
  const field = `event.${eventName}`;
  const [segments, campaigns, workflows] = await Promise.all([
    segmentsReferencingField(db, projectId, field),
    campaignsUsing(db, projectId, { field }),
    workflowsUsingEvent(db, projectId, eventName),
  ]);
  return { eventName, segments, campaigns, workflows };
}

/** Deletes every event of a name; the service's own names are refused with 422 reserved_event. */
export async function deleteEventName(db: Kysely<Database>, projectId: string, eventName: string): Promise<number> {
  if (isProtectedEventName(eventName)) {
    throw validationError([
      {
        field: 'eventName',
        code: RESERVED_EVENT_CODE,
        message: 'Events the service records itself (email.*, contact.*, segment.<slug>.entry/exit) cannot be deleted',
      },
    ]);
  }
  return db.transaction().execute(async (trx) => {
    const deleted = await deleteEventsByName(trx, projectId, eventName);
    // Out of the analytics counts in the same transaction: exactly what was deleted.
    await uncountEvents(trx, projectId, eventName, deleted);
    return deleted.reduce((n, b) => n + b.count, 0);
  });
}

import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';
import { type EventBucketCount, eventBucket } from '../analytics/index.js';

/** The keyset position of a row: created_at with microseconds (as UTC text) and id. */
export interface EventPosition {
  at: string;
  id: string;
}

export interface EventFilter {
  name?: string;
  contactId?: string;
}

export interface EventListRow {
  id: string;
  contact_id: string;
  email: string;
  name: string;
  data: Record<string, unknown>;
  created_at: Date;
  /** created_at with microseconds, for the next page's cursor (Date keeps only milliseconds). */
  position_at: string;
}

const UTC_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

/** Events of a project, newest first (created_at, id), after `after` when given. */
export async function listEvents(
  db: Kysely<Database>,
  projectId: string,
  opts: { filter: EventFilter; limit: number; after?: EventPosition },
): Promise<EventListRow[]> {
  const { filter, after } = opts;
  return db
    .selectFrom('events as e')
    .innerJoin('contacts as c', 'c.id', 'e.contact_id')
    .select(['e.id', 'e.contact_id', 'c.email', 'e.name', 'e.data', 'e.created_at'])
    .select(sql<string>`to_char(e.created_at AT TIME ZONE 'UTC', ${UTC_MICROS})`.as('position_at'))
    .where('e.project_id', '=', projectId)
    .$if(filter.name !== undefined, (q) => q.where('e.name', '=', filter.name ?? ''))
    .$if(filter.contactId !== undefined, (q) => q.where('e.contact_id', '=', filter.contactId ?? ''))
    .$if(after !== undefined, (q) =>
      q.where(sql<boolean>`(e.created_at, e.id) < (${after?.at ?? ''}::timestamptz, ${after?.id ?? ''}::uuid)`),
    )
    .orderBy('e.created_at', 'desc')
    .orderBy('e.id', 'desc')
    .limit(opts.limit)
    .execute();
}

export async function countEvents(db: Kysely<Database>, projectId: string, filter: EventFilter): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .$if(filter.name !== undefined, (q) => q.where('name', '=', filter.name ?? ''))
    .$if(filter.contactId !== undefined, (q) => q.where('contact_id', '=', filter.contactId ?? ''))
    .executeTakeFirstOrThrow();
  return row.n;
}

export async function contactExists(db: Kysely<Database>, projectId: string, contactId: string): Promise<boolean> {
  const row = await db.selectFrom('contacts').select('id').where('project_id', '=', projectId).where('id', '=', contactId).executeTakeFirst();
  return row !== undefined;
}

export interface EventNameRow {
  name: string;
  count: number;
  last_seen_at: Date;
}

/** Distinct names of a project with their counts, most recently seen first. */
export async function listEventNames(db: Kysely<Database>, projectId: string): Promise<EventNameRow[]> {
  return db
    .selectFrom('events')
    .select(['name', (eb) => eb.fn.countAll<number>().as('count'), (eb) => eb.fn.max('created_at').as('last_seen_at')])
    .where('project_id', '=', projectId)
    .groupBy('name')
    .orderBy(sql`max(created_at)`, 'desc')
    .orderBy('name')
    .execute();
}

export interface EventStatsRow {
  name: string;
  last24h: number;
  last7d: number;
  last30d: number;
  total: number;
  daily: { date: string; count: number }[] | null;
}

/**
 * Counts per name over rolling windows (24 h, 7 d, 30 d, all time) and, with `days`, a
 * zero-filled count per UTC day for the last `days` days (today included): one statement,
 * one pass over the project's events (plus one over the series window).
 */
export async function eventStats(
  db: Kysely<Database>,
  projectId: string,
  opts: { days?: number; name?: string },
): Promise<EventStatsRow[]> {
  const days = opts.days ?? 0;
  const name = opts.name ?? null;
  const { rows } = await sql<EventStatsRow>`
    WITH first_day AS (
      SELECT (now() AT TIME ZONE 'UTC')::date - (${days}::int - 1) AS d
    ),
    totals AS (
      SELECT name,
             count(*) FILTER (WHERE created_at >= now() - interval '24 hours')::int AS last24h,
             count(*) FILTER (WHERE created_at >= now() - interval '7 days')::int AS last7d,
             count(*) FILTER (WHERE created_at >= now() - interval '30 days')::int AS last30d,
             count(*)::int AS total
      FROM events
      WHERE project_id = ${projectId} AND (${name}::text IS NULL OR name = ${name}::text)
      GROUP BY name
    ),
    per_day AS (
      SELECT name, (created_at AT TIME ZONE 'UTC')::date AS day, count(*)::int AS n
      FROM events
      WHERE ${days}::int > 0 AND project_id = ${projectId} AND (${name}::text IS NULL OR name = ${name}::text)
        AND created_at >= ((SELECT d FROM first_day)::timestamp AT TIME ZONE 'UTC')
      GROUP BY 1, 2
    )
    SELECT t.*,
           CASE WHEN ${days}::int > 0 THEN (
             SELECT jsonb_agg(jsonb_build_object('date', to_char(f.d + s.i, 'YYYY-MM-DD'), 'count', coalesce(p.n, 0)) ORDER BY s.i)
             FROM first_day f
             CROSS JOIN generate_series(0, ${days}::int - 1) AS s(i)
             LEFT JOIN per_day p ON p.name = t.name AND p.day = f.d + s.i
           ) END AS daily
    FROM totals t
    ORDER BY t.total DESC, t.name`.execute(db);
  return rows;
}

/**
 * Deletes every event of one name in a project; returns how many went per analytics bucket (the
 * analytics facade subtracts exactly those: events a concurrent track commits meanwhile stay counted).
 */
export async function deleteEventsByName(db: Kysely<Database>, projectId: string, name: string): Promise<EventBucketCount[]> {
  const { rows } = await sql<EventBucketCount>`
    WITH gone AS (DELETE FROM events WHERE project_id = ${projectId} AND name = ${name} RETURNING created_at)
    SELECT ${eventBucket(sql`created_at`)} AS bucket, count(*)::int AS count FROM gone GROUP BY 1`.execute(db);
  return rows;
}

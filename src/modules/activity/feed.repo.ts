import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../db/schema.js';
import { type ActivityType, CONTACT_EVENT_TYPES, EMAIL_EVENT_TYPES, type FeedPosition, SourceRank } from './activity.rules.js';

/**
 * The feed's SQL (docs/activity.md "How a page is read"): one statement per page, a UNION ALL
 * of per-source subqueries, each filtered, ordered and LIMITed along an existing index, merged
 * and cut to the page, and only then joined to contacts, emails, campaigns, templates and
 * workflows for the page's items (a handful of primary-key lookups, set-based).
 */

/** Which rows of `events` the feed reads. */
export type EventSelection =
  /** Every event: one scan of (project_id, created_at). */
  | { kind: 'all' }
  /** These names: one subquery per name along (project_id, name, created_at). */
  | { kind: 'names'; names: readonly string[] }
  /** Events whose type is one of these, decided per row (too many names for one subquery each). */
  | { kind: 'types'; types: readonly ActivityType[] }
  | { kind: 'none' };

export interface FeedQuery {
  projectId: string;
  /** Inclusive window, microsecond UTC text. */
  start: string;
  end: string;
  contactId?: string;
  after?: FeedPosition;
  /** Rows wanted (the page size plus one, to know whether there is more). */
  limit: number;
  events: EventSelection;
  campaigns: { scheduled: boolean; sent: boolean };
  workflows: { started: boolean; completed: boolean; failed: boolean };
}

export interface FeedRow {
  rank: SourceRank;
  id: string;
  ts: Date;
  /** The timestamp with microseconds (UTC text): the next page's cursor. */
  position_at: string;
  /** The event's name; for campaign and workflow items, their type. */
  name: string;
  contact_id: string | null;
  contact_email: string | null;
  data: Record<string, unknown> | null;
  email_id: string | null;
  email_subject: string | null;
  email_found: boolean;
  campaign_id: string | null;
  campaign_name: string | null;
  template_id: string | null;
  template_name: string | null;
  workflow_id: string | null;
  workflow_name: string | null;
}

const UTC_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;
const UTC_MILLIS = `YYYY-MM-DD"T"HH24:MI:SS.MS"Z"`;
const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const iso = (column: RawBuilder<unknown>) => sql`to_char(${column} AT TIME ZONE 'UTC', ${UTC_MILLIS})`;

/** The activity type of an event row by its name, in SQL: `typeOfEventName` of activity.rules.ts. */
const eventTypeSql = sql`CASE
  WHEN e.name IN (${sql.join([...EMAIL_EVENT_TYPES, ...CONTACT_EVENT_TYPES])}) THEN e.name
  WHEN e.name ~ '^segment\\..+\\.entry$' THEN 'segment.entry'
  WHEN e.name ~ '^segment\\..+\\.exit$' THEN 'segment.exit'
  ELSE 'event.tracked' END`;

/**
 * Rows strictly after the cursor in (timestamp DESC, rank DESC, id DESC) order, for a source
 * of rank `rank`: `(ts, rank, id) < (at, after.rank, after.id)`, spelt out so that the index
 * sees a plain bound on its timestamp column.
 */
function afterCursor(ts: RawBuilder<unknown>, id: RawBuilder<unknown>, rank: SourceRank, after: FeedPosition | undefined) {
  if (!after) return sql``;
  const at = sql`${after.at}::timestamptz`;
  if (rank < after.rank) return sql`AND ${ts} <= ${at}`;
  if (rank > after.rank) return sql`AND ${ts} < ${at}`;
  return sql`AND ${ts} <= ${at} AND (${ts} < ${at} OR ${id} < ${after.id}::uuid)`;
}

type Mode = 'page' | 'count';

interface Source {
  rank: SourceRank;
  /** Columns of the page mode, in UNION order (see the outer SELECT). */
  columns: RawBuilder<unknown>;
  from: RawBuilder<unknown>;
  ts: RawBuilder<unknown>;
  id: RawBuilder<unknown>;
  where: RawBuilder<unknown>;
}

const inWindow = (q: FeedQuery, s: Source) => sql`${s.ts} >= ${q.start}::timestamptz AND ${s.ts} <= ${q.end}::timestamptz`;

function subquery(q: FeedQuery, s: Source, mode: Mode, limit: number) {
  // The count needs no tie-break: ordering by the timestamp alone keeps it index-only where it can be.
  const order = mode === 'page' ? sql`ORDER BY ${s.ts} DESC, ${s.id} DESC` : sql`ORDER BY ${s.ts} DESC`;
  const select = mode === 'page' ? s.columns : sql`1 AS one`;
  return sql`(SELECT ${select} FROM ${s.from} WHERE ${s.where} AND ${inWindow(q, s)} ${afterCursor(s.ts, s.id, s.rank, q.after)} ${order} LIMIT ${limit})`;
}

function eventSources(q: FeedQuery): Source[] {
  const base = {
    rank: SourceRank.event,
    from: sql`events e`,
    ts: sql`e.created_at`,
    id: sql`e.id`,
    columns: sql`${SourceRank.event}::int AS rank, e.id, e.created_at AS ts, e.name, e.contact_id, e.data,
      CASE WHEN e.name LIKE 'email.%' AND e.data ->> 'emailId' ~* ${UUID_PATTERN} THEN (e.data ->> 'emailId')::uuid END AS email_id,
      NULL::uuid AS campaign_id, NULL::uuid AS workflow_id`,
  };
  const scope = sql`e.project_id = ${q.projectId}::uuid ${q.contactId ? sql`AND e.contact_id = ${q.contactId}::uuid` : sql``}`;
  switch (q.events.kind) {
    case 'none':
      return [];
    case 'all':
      return [{ ...base, where: scope }];
    case 'names':
      return q.events.names.map((name) => ({ ...base, where: sql`${scope} AND e.name = ${name}` }));
    case 'types':
      return [{ ...base, where: sql`${scope} AND ${eventTypeSql} IN (${sql.join([...q.events.types])})` }];
  }
}

function campaignSources(q: FeedQuery): Source[] {
  const sources: Source[] = [];
  const scope = sql`c.project_id = ${q.projectId}::uuid`;
  if (q.campaigns.scheduled) {
    sources.push({
      rank: SourceRank.campaignScheduled,
      from: sql`campaigns c`,
      ts: sql`c.scheduled_for`,
      id: sql`c.id`,
      // A campaign cancelled before its time never reached it: no item.
      where: sql`${scope} AND c.status <> 'DRAFT' AND (c.status <> 'CANCELLED' OR c.cancelled_at >= c.scheduled_for)`,
      columns: sql`${SourceRank.campaignScheduled}::int AS rank, c.id, c.scheduled_for AS ts, 'campaign.scheduled' AS name, NULL::uuid AS contact_id,
        jsonb_build_object('subject', c.subject, 'status', c.status, 'scheduledFor', ${iso(sql`c.scheduled_for`)}) AS data,
        NULL::uuid AS email_id, c.id AS campaign_id, NULL::uuid AS workflow_id`,
    });
  }
  if (q.campaigns.sent) {
    sources.push({
      rank: SourceRank.campaignSent,
      from: sql`campaigns c`,
      ts: sql`c.sent_at`,
      id: sql`c.id`,
      where: sql`${scope} AND c.status = 'SENT'`,
      columns: sql`${SourceRank.campaignSent}::int AS rank, c.id, c.sent_at AS ts, 'campaign.sent' AS name, NULL::uuid AS contact_id,
        jsonb_build_object('subject', c.subject, 'totalRecipients', c.total_recipients, 'scheduledFor', ${iso(sql`c.scheduled_for`)}) AS data,
        NULL::uuid AS email_id, c.id AS campaign_id, NULL::uuid AS workflow_id`,
    });
  }
  return sources;
}

function workflowSources(q: FeedQuery): Source[] {
  const sources: Source[] = [];
  const scope = sql`x.project_id = ${q.projectId}::uuid ${q.contactId ? sql`AND x.contact_id = ${q.contactId}::uuid` : sql``}`;
  if (q.workflows.started) {
    sources.push({
      rank: SourceRank.workflowStarted,
      from: sql`workflow_executions x`,
      ts: sql`x.started_at`,
      id: sql`x.id`,
      where: scope,
      columns: sql`${SourceRank.workflowStarted}::int AS rank, x.id, x.started_at AS ts, 'workflow.started' AS name, x.contact_id,
        jsonb_build_object('status', x.status) AS data, NULL::uuid AS email_id, NULL::uuid AS campaign_id, x.workflow_id`,
    });
  }
  // One subquery per final status, each along workflow_executions_project_ended_idx (project_id, status, completed_at, id).
  const ended = [...(q.workflows.completed ? ['COMPLETED', 'EXITED'] : []), ...(q.workflows.failed ? ['FAILED'] : [])];
  for (const status of ended) {
    sources.push({
      rank: SourceRank.workflowEnded,
      from: sql`workflow_executions x`,
      ts: sql`x.completed_at`,
      id: sql`x.id`,
      where: sql`${scope} AND x.status = ${status}`,
      columns: sql`${SourceRank.workflowEnded}::int AS rank, x.id, x.completed_at AS ts,
        ${status === 'FAILED' ? 'workflow.failed' : 'workflow.completed'}::text AS name, x.contact_id,
        jsonb_strip_nulls(jsonb_build_object('status', x.status, 'error', x.error, 'exitReason', x.exit_reason)) AS data,
        NULL::uuid AS email_id, NULL::uuid AS campaign_id, x.workflow_id`,
    });
  }
  return sources;
}

const sourcesOf = (q: FeedQuery): Source[] => [...eventSources(q), ...campaignSources(q), ...workflowSources(q)];

/** The statement of one page of the feed (newest first, strictly after `q.after`), its items' names joined in. */
export function feedPageSql(q: FeedQuery): RawBuilder<FeedRow> | undefined {
  const sources = sourcesOf(q);
  if (sources.length === 0) return undefined;
  const union = sql.join(
    sources.map((s) => subquery(q, s, 'page', q.limit)),
    sql` UNION ALL `,
  );
  const p = sql`${q.projectId}::uuid`;
  return sql<FeedRow>`
    WITH page AS MATERIALIZED (
      SELECT * FROM (${union}) u ORDER BY ts DESC, rank DESC, id DESC LIMIT ${q.limit}
    )
    SELECT pg.rank, pg.id, pg.ts, to_char(pg.ts AT TIME ZONE 'UTC', ${UTC_MICROS}) AS position_at, pg.name,
           pg.contact_id, ct.email AS contact_email, pg.data,
           pg.email_id, em.subject AS email_subject, em.id IS NOT NULL AS email_found,
           camp.id AS campaign_id, camp.name AS campaign_name, tpl.id AS template_id, tpl.name AS template_name,
           wf.id AS workflow_id, wf.name AS workflow_name
    FROM page pg
    LEFT JOIN contacts ct ON ct.project_id = ${p} AND ct.id = pg.contact_id
    LEFT JOIN emails em ON em.project_id = ${p} AND em.id = pg.email_id
    LEFT JOIN campaigns camp ON camp.project_id = ${p} AND camp.id = coalesce(pg.campaign_id, em.campaign_id)
    LEFT JOIN templates tpl ON tpl.project_id = ${p} AND tpl.id = em.template_id
    LEFT JOIN workflow_steps st ON st.project_id = ${p} AND st.id = em.workflow_step_id
    LEFT JOIN workflows wf ON wf.project_id = ${p} AND wf.id = coalesce(pg.workflow_id, st.workflow_id)
    ORDER BY pg.ts DESC, pg.rank DESC, pg.id DESC`;
}

export async function readFeedPage(db: Kysely<Database>, q: FeedQuery): Promise<FeedRow[]> {
  const statement = feedPageSql(q);
  return statement ? (await statement.execute(db)).rows : [];
}

/**
 * The statement counting the items matching the query (no cursor). With `cap`, up to `cap` + 1
 * (reading stops there: the first page's `total`); without, exactly (a short window: recent-count).
 */
export function feedCountSql(q: FeedQuery, cap?: number): RawBuilder<{ n: number }> | undefined {
  const sources = sourcesOf({ ...q, after: undefined });
  if (sources.length === 0) return undefined;
  if (cap === undefined) {
    const counts = sources.map((s) => sql`(SELECT count(*) FROM ${s.from} WHERE ${s.where} AND ${inWindow(q, s)})`);
    return sql<{ n: number }>`SELECT (${sql.join(counts, sql` + `)})::int AS n`;
  }
  const union = sql.join(
    sources.map((s) => subquery(q, s, 'count', cap + 1)),
    sql` UNION ALL `,
  );
  return sql<{ n: number }>`SELECT count(*)::int AS n FROM (SELECT 1 FROM (${union}) u LIMIT ${cap + 1}) c`;
}

export async function countFeed(db: Kysely<Database>, q: FeedQuery, cap?: number): Promise<number> {
  const statement = feedCountSql(q, cap);
  return statement ? ((await statement.execute(db)).rows[0]?.n ?? 0) : 0;
}

/**
 * The project's distinct event names, at most `max`, by a loose index scan of
 * (project_id, name, created_at): one index probe per name, whatever the number of events.
 */
export async function distinctEventNames(db: Kysely<Database>, projectId: string, max: number): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    WITH RECURSIVE names(name, n) AS (
      (SELECT e.name, 1 FROM events e WHERE e.project_id = ${projectId}::uuid ORDER BY e.name LIMIT 1)
      UNION ALL
      SELECT (SELECT e.name FROM events e WHERE e.project_id = ${projectId}::uuid AND e.name > names.name ORDER BY e.name LIMIT 1), names.n + 1
      FROM names WHERE names.name IS NOT NULL AND names.n < ${max}
    )
    SELECT name FROM names WHERE name IS NOT NULL`.execute(db);
  return rows.map((r) => r.name);
}

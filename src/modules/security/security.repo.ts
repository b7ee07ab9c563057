import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, SuspensionSource } from '../../db/schema.js';
import type { ReputationCounts, WindowCounts } from './thresholds.js';
import { YOUNG_PROJECT_DAYS } from './thresholds.js';

type Db = Kysely<Database> | Transaction<Database>;

export interface ReputationRow {
  projectId: string;
  disabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
  young: boolean;
  /** The last lift of a suspension: counting starts again from there. */
  liftedAt: Date | null;
  counts: ReputationCounts;
}

interface RawReputation {
  id: string;
  disabled: boolean;
  disabled_reason: string | null;
  disabled_at: Date | null;
  young: boolean;
  lifted_at: Date | null;
  s24: number; b24: number; c24: number;
  s7: number; b7: number; c7: number;
  sall: number; ball: number; call: number;
}

/**
 * A project's counts over its last 24 hours, 7 days and all time, in ONE statement over the
 * counter buckets (migration 0025: at most 8 shards × 193 hourly buckets + the folded totals, a
 * primary-key range scan), never over the emails. Windows are whole UTC hours: "24 hours" is
 * the current hour and the 24 before it. After a lift, the windows start at the first hour
 * after it and the all-time totals are those recorded at the lift subtracted.
 */
export async function readReputation(db: Db, projectId: string): Promise<ReputationRow | undefined> {
  const window = (interval: string) =>
    sql.raw(`s.bucket >= date_trunc('hour', now(), 'UTC') - interval '${interval}' AND (l.lifted_at IS NULL OR s.bucket > l.lifted_at)`);
  const d = window('24 hours');
  const w = window('7 days');
  const { rows } = await sql<RawReputation>`
    SELECT p.id, p.disabled, p.disabled_reason, p.disabled_at,
           p.created_at > now() - make_interval(days => ${YOUNG_PROJECT_DAYS}::int) AS young,
           l.lifted_at,
           coalesce(sum(s.sent) FILTER (WHERE ${d}), 0)::float8 AS s24,
           coalesce(sum(s.bounced) FILTER (WHERE ${d}), 0)::float8 AS b24,
           coalesce(sum(s.complained) FILTER (WHERE ${d}), 0)::float8 AS c24,
           coalesce(sum(s.sent) FILTER (WHERE ${w}), 0)::float8 AS s7,
           coalesce(sum(s.bounced) FILTER (WHERE ${w}), 0)::float8 AS b7,
           coalesce(sum(s.complained) FILTER (WHERE ${w}), 0)::float8 AS c7,
           (coalesce(sum(s.sent), 0) - coalesce(l.lifted_sent, 0))::float8 AS sall,
           (coalesce(sum(s.bounced), 0) - coalesce(l.lifted_bounced, 0))::float8 AS ball,
           (coalesce(sum(s.complained), 0) - coalesce(l.lifted_complained, 0))::float8 AS call
    FROM projects p
    LEFT JOIN LATERAL (
      SELECT lifted_at, lifted_sent, lifted_bounced, lifted_complained FROM project_suspensions
      WHERE project_id = p.id AND lifted_at IS NOT NULL ORDER BY lifted_at DESC LIMIT 1
    ) l ON true
    LEFT JOIN project_email_stats s ON s.project_id = p.id
    WHERE p.id = ${projectId}
    GROUP BY p.id, l.lifted_at, l.lifted_sent, l.lifted_bounced, l.lifted_complained`.execute(db);
  const r = rows[0];
  if (!r) return undefined;
  const counts = (sent: number, bounced: number, complained: number): WindowCounts => ({ sent, bounced, complained });
  return {
    projectId: r.id,
    disabled: r.disabled,
    disabledReason: r.disabled_reason,
    disabledAt: r.disabled_at,
    young: r.young,
    liftedAt: r.lifted_at,
    counts: { last24h: counts(r.s24, r.b24, r.c24), last7d: counts(r.s7, r.b7, r.c7), allTime: counts(r.sall, r.ball, r.call) },
  };
}

/** Disables an enabled project with the reason; undefined when it was already disabled (or is gone). */
export async function markProjectDisabled(trx: Transaction<Database>, projectId: string, reason: string): Promise<{ name: string } | undefined> {
  return trx
    .updateTable('projects')
    .set({ disabled: true, disabled_reason: reason, disabled_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', projectId)
    .where('disabled', '=', false)
    .returning('name')
    .executeTakeFirst();
}

export async function insertSuspension(
  trx: Transaction<Database>,
  input: { projectId: string; source: SuspensionSource; reason: string; metrics?: Record<string, unknown> },
): Promise<string> {
  const row = await trx
    .insertInto('project_suspensions')
    .values({ project_id: input.projectId, source: input.source, reason: input.reason, metrics: JSON.stringify(input.metrics ?? {}) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The project row, locked: whether it exists and is disabled (and why). */
export async function lockProject(trx: Transaction<Database>, projectId: string) {
  return trx
    .selectFrom('projects')
    .select(['id', 'name', 'disabled', 'disabled_reason'])
    .where('id', '=', projectId)
    .forUpdate()
    .executeTakeFirst();
}

export async function markProjectEnabled(trx: Transaction<Database>, projectId: string): Promise<void> {
  await trx
    .updateTable('projects')
    .set({ disabled: false, disabled_reason: null, disabled_at: null, updated_at: sql`now()` })
    .where('id', '=', projectId)
    .execute();
}

/**
 * Lifts the project's open suspensions, recording who and the all-time totals at this moment
 * (the reputation counts from here on). A project disabled without a recorded suspension gets
 * one, lifted at once, so that every lift is in the history. Returns how many were lifted.
 */
export async function liftOpenSuspensions(
  trx: Transaction<Database>,
  input: { projectId: string; by: string; reason: string | null },
): Promise<number> {
  const { rows } = await sql<{ lifted: number }>`
    WITH totals AS (
      SELECT coalesce(sum(sent), 0) AS sent, coalesce(sum(bounced), 0) AS bounced, coalesce(sum(complained), 0) AS complained
      FROM project_email_stats WHERE project_id = ${input.projectId}
    ),
    lifted AS (
      UPDATE project_suspensions s SET lifted_at = now(), lifted_by = ${input.by},
        lifted_sent = t.sent, lifted_bounced = t.bounced, lifted_complained = t.complained
      FROM totals t
      WHERE s.project_id = ${input.projectId} AND s.lifted_at IS NULL
      RETURNING s.id
    ),
    unrecorded AS (
      INSERT INTO project_suspensions (project_id, source, reason, lifted_at, lifted_by, lifted_sent, lifted_bounced, lifted_complained)
      SELECT ${input.projectId}, 'OPERATOR', coalesce(${input.reason}::text, 'disabled'), now(), ${input.by}, t.sent, t.bounced, t.complained
      FROM totals t WHERE NOT EXISTS (SELECT 1 FROM lifted)
      RETURNING id
    )
    SELECT (SELECT count(*) FROM lifted) + (SELECT count(*) FROM unrecorded) AS lifted`.execute(trx);
  return Number(rows[0]?.lifted ?? 0);
}

export interface SuspensionRow {
  id: string;
  source: SuspensionSource;
  reason: string;
  metrics: Record<string, unknown>;
  created_at: Date;
  lifted_at: Date | null;
  lifted_by: string | null;
}

/** The project's suspensions, newest first (at most `limit`). */
export async function listSuspensions(db: Db, projectId: string, limit: number): Promise<SuspensionRow[]> {
  return db
    .selectFrom('project_suspensions')
    .select(['id', 'source', 'reason', 'metrics', 'created_at', 'lifted_at', 'lifted_by'])
    .where('project_id', '=', projectId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The addresses of the project's OWNERs and ADMINs (who are told of a suspension). */
export async function listManagerEmails(db: Db, projectId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('u.email')
    .where('m.project_id', '=', projectId)
    .where('m.role', 'in', ['OWNER', 'ADMIN'])
    .orderBy('u.email')
    .execute();
  return rows.map((r) => r.email);
}

/**
 * Folds counter buckets older than 8 days into one `-infinity` bucket per project (shard 0), so
 * a project's all-time sum stays a few thousand rows. One statement; returns the rows folded.
 */
export async function compactEmailStats(db: Db): Promise<number> {
  const { rows } = await sql<{ folded: number }>`
    WITH old AS (
      DELETE FROM project_email_stats
      WHERE bucket < now() - interval '8 days' AND bucket <> '-infinity'
      RETURNING project_id, sent, bounced, complained
    ),
    folded AS (
      INSERT INTO project_email_stats AS s (project_id, bucket, shard, sent, bounced, complained)
      SELECT project_id, '-infinity', 0, sum(sent), sum(bounced), sum(complained) FROM old GROUP BY project_id
      ON CONFLICT (project_id, bucket, shard) DO UPDATE SET
        sent = s.sent + excluded.sent, bounced = s.bounced + excluded.bounced, complained = s.complained + excluded.complained
      RETURNING 1
    )
    SELECT count(*)::int AS folded FROM old`.execute(db);
  return rows[0]?.folded ?? 0;
}

/**
 * Emails sent, hard-bounced and complained about since the counters began, every project
 * together (GET /metrics' `mailplatform_emails_total`): a sum over `project_email_stats`, whose
 * buckets older than 8 days are folded into one per project, so it reads at most 8 days of hours
 * per active project and never the emails themselves. The instance's own mail is not counted.
 */
export async function sumEmailStats(db: Db): Promise<WindowCounts> {
  const { rows } = await sql<WindowCounts>`
    SELECT coalesce(sum(sent), 0)::bigint AS sent, coalesce(sum(bounced), 0)::bigint AS bounced, coalesce(sum(complained), 0)::bigint AS complained
    FROM project_email_stats`.execute(db);
  return rows[0] ?? { sent: 0, bounced: 0, complained: 0 };
}

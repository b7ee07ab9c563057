import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * Writes to the analytics rollups besides their triggers (migration 0029; docs/analytics.md
 * "Rollups"): the adjustments of deletions, which run in the deleting transaction, and the
 * compaction of writer shards.
 */

/** The analytics bucket (15 minutes, UTC) of a timestamp, in SQL: what a deleter groups its rows by. */
export const eventBucket = (column: RawBuilder<unknown>) => sql<Date>`analytics_bucket(${column})`;

/** Events of one name that went, per bucket of {@link eventBucket}. */
export interface EventBucketCount {
  bucket: Date;
  count: number;
}

/**
 * After events of `name` were deleted (same transaction): subtracts exactly those, per bucket and
 * per UTC day. Counting what the DELETE returned (rather than dropping the name's counters) keeps
 * events that a concurrent track inserted meanwhile, which the DELETE did not see, counted.
 */
export async function uncountEvents(trx: Transaction<Database>, projectId: string, name: string, deleted: readonly EventBucketCount[]): Promise<void> {
  if (deleted.length === 0) return;
  await sql`
    WITH gone AS MATERIALIZED (
      SELECT bucket, count FROM unnest(${deleted.map((d) => d.bucket.toISOString())}::timestamptz[], ${deleted.map((d) => d.count)}::int[]) AS g(bucket, count)
      WHERE NOT analytics_is_system_event(${name})
    ),
    fine AS (
      INSERT INTO analytics_event_counts AS t (project_id, bucket, name, shard, count)
      SELECT ${projectId}, bucket, ${name}, pg_backend_pid() % 8, -sum(count) FROM gone GROUP BY bucket ORDER BY bucket
      ON CONFLICT (project_id, bucket, name, shard) DO UPDATE SET count = t.count + excluded.count
    )
    INSERT INTO analytics_event_daily AS t (project_id, day, name, shard, count)
    SELECT ${projectId}, (bucket AT TIME ZONE 'UTC')::date, ${name}, pg_backend_pid() % 8, -sum(count) FROM gone
    GROUP BY 2 ORDER BY 2
    ON CONFLICT (project_id, day, name, shard) DO UPDATE SET count = t.count + excluded.count`.execute(trx);
}

/**
 * Before contacts are deleted (same transaction; their events go with them, ON DELETE CASCADE):
 * locks the contacts, so that no event of theirs can be inserted before the delete (an insert
 * takes a key-share lock on its contact), then subtracts their tracked events from the counts.
 */
export async function uncountContactEvents(trx: Transaction<Database>, projectId: string, contactIds: readonly string[]): Promise<void> {
  if (contactIds.length === 0) return;
  await sql`
    SELECT id FROM contacts WHERE project_id = ${projectId} AND id = ANY(${contactIds}::uuid[]) ORDER BY id FOR UPDATE`.execute(trx);
  await sql`
    WITH gone AS MATERIALIZED (
      SELECT analytics_bucket(created_at) AS bucket, name, count(*)::int AS n
      FROM events
      WHERE project_id = ${projectId} AND contact_id = ANY(${contactIds}::uuid[]) AND NOT analytics_is_system_event(name)
      GROUP BY 1, 2
    ),
    fine AS (
      INSERT INTO analytics_event_counts AS t (project_id, bucket, name, shard, count)
      SELECT ${projectId}, bucket, name, pg_backend_pid() % 8, -n FROM gone ORDER BY bucket, name
      ON CONFLICT (project_id, bucket, name, shard) DO UPDATE SET count = t.count + excluded.count
    )
    INSERT INTO analytics_event_daily AS t (project_id, day, name, shard, count)
    SELECT ${projectId}, (bucket AT TIME ZONE 'UTC')::date, name, pg_backend_pid() % 8, -sum(n) FROM gone
    GROUP BY 2, 3 ORDER BY 2, 3
    ON CONFLICT (project_id, day, name, shard) DO UPDATE SET count = t.count + excluded.count`.execute(trx);
}

/** Rows folded per statement: each batch is a short transaction. */
const COMPACT_BATCH = 5000;

/**
 * Folds the writer shards of buckets older than an hour (event days: before today, UTC) into
 * shard 0, so a range reads one row per bucket (shards that cancel out, as after a deletion, leave
 * no row). Rows a writer holds right now are skipped (next
 * run). Returns the rows folded.
 */
export async function compactRollups(db: Kysely<Database>): Promise<number> {
  let total = 0;
  for (const fold of [foldEmailCounts, foldEventCounts, foldEventDays, foldCampaignEmailCounts]) {
    for (;;) {
      const n = await fold(db);
      total += n;
      if (n < COMPACT_BATCH) break;
    }
  }
  return total;
}

const EMAIL_COLUMNS = [
  'sent', 'delivered', 'opened', 'opened_any', 'clicked', 'bounced', 'complained',
  'sent_delivered', 'sent_opened', 'sent_clicked', 'sent_bounced', 'sent_complained',
] as const;

/**
 * Folds the shards of buckets older than an hour into shard 0, COMPACT_BATCH rows at a time:
 * `key` identifies a bucket (the conflict target with `shard`), `carry` columns are copied along
 * (functionally dependent on the key), `columns` are the counters summed. A bucket whose sums
 * are all zero is dropped.
 */
async function foldShards(
  db: Kysely<Database>,
  t: { table: string; key: readonly string[]; carry?: readonly string[]; columns: readonly string[] },
): Promise<number> {
  const table = sql.table(t.table);
  const refs = (names: readonly string[]) => sql.join(names.map((c) => sql.ref(c)));
  const group = [...(t.carry ?? []), ...t.key];
  const sums = sql.join(t.columns.map((c) => sql`sum(${sql.ref(c)})`));
  const set = sql.join(t.columns.map((c) => sql`${sql.ref(c)} = t.${sql.ref(c)} + excluded.${sql.ref(c)}`));
  const joined = sql.join([...t.key, 'shard'].map((c) => sql`a.${sql.ref(c)} = p.${sql.ref(c)}`), sql` AND `);
  const { rows } = await sql<{ n: number }>`
    WITH picked AS (
      SELECT ${refs(t.key)}, shard FROM ${table}
      WHERE shard <> 0 AND bucket < now() - interval '1 hour'
      LIMIT ${COMPACT_BATCH} FOR UPDATE SKIP LOCKED
    ),
    moved AS (
      DELETE FROM ${table} a USING picked p
      WHERE ${joined}
      RETURNING a.*
    ),
    folded AS (
      INSERT INTO ${table} AS t (${refs(group)}, shard, ${refs(t.columns)})
      SELECT ${refs(group)}, 0, ${sums} FROM moved GROUP BY ${refs(group)}
      HAVING ${sql.join(t.columns.map((c) => sql`sum(${sql.ref(c)}) <> 0`), sql` OR `)}
      ORDER BY ${refs(t.key)}
      ON CONFLICT (${refs([...t.key, 'shard', ...(t.carry ?? [])])}) DO UPDATE SET ${set}
    )
    SELECT count(*)::int AS n FROM moved`.execute(db);
  return rows[0]?.n ?? 0;
}

const foldEmailCounts = (db: Kysely<Database>) => foldShards(db, { table: 'analytics_email_counts', key: ['project_id', 'bucket'], columns: EMAIL_COLUMNS });

async function foldEventCounts(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    WITH picked AS (
      SELECT project_id, bucket, name, shard FROM analytics_event_counts
      WHERE shard <> 0 AND bucket < now() - interval '1 hour'
      LIMIT ${COMPACT_BATCH} FOR UPDATE SKIP LOCKED
    ),
    moved AS (
      DELETE FROM analytics_event_counts a USING picked p
      WHERE a.project_id = p.project_id AND a.bucket = p.bucket AND a.name = p.name AND a.shard = p.shard
      RETURNING a.*
    ),
    folded AS (
      INSERT INTO analytics_event_counts AS t (project_id, bucket, name, shard, count)
      SELECT project_id, bucket, name, 0, sum(count) FROM moved GROUP BY 1, 2, 3 HAVING sum(count) <> 0 ORDER BY 1, 2, 3
      ON CONFLICT (project_id, bucket, name, shard) DO UPDATE SET count = t.count + excluded.count
    )
    SELECT count(*)::int AS n FROM moved`.execute(db);
  return rows[0]?.n ?? 0;
}

async function foldEventDays(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    WITH picked AS (
      SELECT project_id, day, name, shard FROM analytics_event_daily
      WHERE shard <> 0 AND day < (now() AT TIME ZONE 'UTC')::date
      LIMIT ${COMPACT_BATCH} FOR UPDATE SKIP LOCKED
    ),
    moved AS (
      DELETE FROM analytics_event_daily a USING picked p
      WHERE a.project_id = p.project_id AND a.day = p.day AND a.name = p.name AND a.shard = p.shard
      RETURNING a.*
    ),
    folded AS (
      INSERT INTO analytics_event_daily AS t (project_id, day, name, shard, count)
      SELECT project_id, day, name, 0, sum(count) FROM moved GROUP BY 1, 2, 3 HAVING sum(count) <> 0 ORDER BY 1, 2, 3
      ON CONFLICT (project_id, day, name, shard) DO UPDATE SET count = t.count + excluded.count
    )
    SELECT count(*)::int AS n FROM moved`.execute(db);
  return rows[0]?.n ?? 0;
}

const CAMPAIGN_COLUMNS = ['delivered', 'opened', 'clicked', 'bounced', 'complained'] as const;

/** A campaign's buckets (migration 0031). */
const foldCampaignEmailCounts = (db: Kysely<Database>) =>
  foldShards(db, { table: 'campaign_email_counts', key: ['campaign_id', 'bucket'], carry: ['project_id'], columns: CAMPAIGN_COLUMNS });

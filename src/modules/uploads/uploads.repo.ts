import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, UploadRow } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Bytes and number of the project's stored images (an index-only scan of the primary key, which carries `size`). */
export async function findUsage(db: Db, projectId: string): Promise<{ bytes: number; files: number }> {
  const { rows } = await sql<{ bytes: number; files: number }>`
    SELECT coalesce(sum(size), 0)::bigint AS bytes, count(*)::int AS files FROM uploads WHERE project_id = ${projectId}`.execute(db);
  return rows[0] ?? { bytes: 0, files: 0 };
}

/**
 * Serialises the uploads of one project: the project row FOR NO KEY UPDATE, held until the
 * commit. Writers of the project's other data (their foreign keys take KEY SHARE) are not
 * blocked; a reset or deletion (FOR UPDATE) waits for the upload, or the upload for it. False
 * when the project is gone.
 */
export async function lockProjectForUpload(trx: Transaction<Database>, projectId: string): Promise<boolean> {
  const { rows } = await sql`SELECT 1 FROM projects WHERE id = ${projectId} FOR NO KEY UPDATE`.execute(trx);
  return rows.length > 0;
}

/**
 * Records `key` as to be deleted after `delaySeconds`, before its object is written: if the
 * upload never commits (a crash, a refusal whose clean-up failed) the drain removes the object.
 */
export async function insertPendingDeletion(db: Db, input: { projectId: string; key: string; delaySeconds: number }): Promise<void> {
  await sql`
    INSERT INTO upload_deletions (project_id, key, not_before)
    VALUES (${input.projectId}, ${input.key}, now() + make_interval(secs => ${input.delaySeconds}))
    ON CONFLICT (project_id, key) DO NOTHING`.execute(db);
}

/**
 * Removes the pending deletion of `key` (the upload commits). False when it is gone: the drain
 * took it (and may have removed the object), so the upload must not commit.
 */
export async function takePendingDeletion(trx: Transaction<Database>, projectId: string, key: string): Promise<boolean> {
  const result = await trx.deleteFrom('upload_deletions').where('project_id', '=', projectId).where('key', '=', key).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Deletes a pending deletion whose upload was refused and whose object is already removed. */
export async function deletePendingDeletion(db: Db, projectId: string, key: string): Promise<void> {
  await db.deleteFrom('upload_deletions').where('project_id', '=', projectId).where('key', '=', key).execute();
}

export async function insertUpload(trx: Transaction<Database>, row: Omit<UploadRow, 'created_at'>): Promise<UploadRow> {
  return trx.insertInto('uploads').values(row).returningAll().executeTakeFirstOrThrow();
}

/** One keyset page, newest first (ids are uuid v7: their order is the upload order). */
export async function listUploadPage(db: Db, projectId: string, opts: { beforeId?: string; limit: number }): Promise<UploadRow[]> {
  let q = db.selectFrom('uploads').selectAll().where('project_id', '=', projectId);
  if (opts.beforeId) q = q.where('id', '<', opts.beforeId);
  return q.orderBy('id', 'desc').limit(opts.limit).execute();
}

/** The graphile-worker job draining upload_deletions (keyed: one waiting at a time, moved to now). */
export async function enqueueDeletionJob(db: Db): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.uploadsDelete}::text, '{}'::json, job_key => ${Tasks.uploadsDelete}::text,
      priority => ${JobPriority.maintenance}::int, max_attempts => 5)`.execute(db);
}

/** Deletes one upload row and queues its object's deletion, in the caller's transaction. False when there is no such upload. */
export async function deleteUpload(trx: Transaction<Database>, projectId: string, id: string): Promise<boolean> {
  const { rows } = await sql<{ key: string }>`
    WITH gone AS (DELETE FROM uploads WHERE project_id = ${projectId} AND id = ${id} RETURNING project_id, key)
    INSERT INTO upload_deletions (project_id, key) SELECT project_id, key FROM gone
    ON CONFLICT (project_id, key) DO UPDATE SET not_before = now()
    RETURNING key`.execute(trx);
  if (rows.length === 0) return false;
  await enqueueDeletionJob(trx);
  return true;
}

/**
 * Queues the deletion of every object of the project, in the transaction of its reset or
 * deletion (before the rows go): the objects are removed once it commits, and stay if it rolls
 * back. Returns how many.
 */
export async function queueProjectDeletions(trx: Transaction<Database>, projectId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    WITH queued AS (
      INSERT INTO upload_deletions (project_id, key) SELECT project_id, key FROM uploads WHERE project_id = ${projectId}
      ON CONFLICT (project_id, key) DO UPDATE SET not_before = now()
      RETURNING 1)
    SELECT count(*)::int AS n FROM queued`.execute(trx);
  const n = rows[0]?.n ?? 0;
  if (n > 0) await enqueueDeletionJob(trx);
  return n;
}

/** A due deletion; `live` when an upload row still names the key (never removed from storage). */
export interface DueDeletion {
  project_id: string;
  key: string;
  live: boolean;
}

/** Locks up to `limit` due deletions, oldest first; rows another drain holds are skipped. */
export async function claimDueDeletions(trx: Transaction<Database>, limit: number): Promise<DueDeletion[]> {
  const { rows } = await sql<DueDeletion>`
    SELECT d.project_id, d.key,
      EXISTS (SELECT 1 FROM uploads u WHERE u.project_id = d.project_id AND u.key = d.key) AS live
    FROM upload_deletions d
    WHERE d.not_before <= now()
    ORDER BY d.not_before
    LIMIT ${limit}
    FOR UPDATE OF d SKIP LOCKED`.execute(trx);
  return rows;
}

/** Deletes the rows of the keys done. */
export async function deleteDeletions(trx: Transaction<Database>, done: readonly { project_id: string; key: string }[]): Promise<void> {
  if (done.length === 0) return;
  await sql`
    DELETE FROM upload_deletions d USING unnest(${done.map((d) => d.project_id)}::uuid[], ${done.map((d) => d.key)}::text[]) AS x(project_id, key)
    WHERE d.project_id = x.project_id AND d.key = x.key`.execute(trx);
}

/** Failed keys are tried again later: 2^attempts minutes, at most a day. */
export async function postponeDeletions(trx: Transaction<Database>, failed: readonly { project_id: string; key: string; error: string }[]): Promise<void> {
  if (failed.length === 0) return;
  await sql`
    UPDATE upload_deletions d
    SET attempts = d.attempts + 1, last_error = left(x.error, 1000),
        not_before = now() + least(interval '1 minute' * power(2, d.attempts + 1), interval '1 day')
    FROM unnest(${failed.map((f) => f.project_id)}::uuid[], ${failed.map((f) => f.key)}::text[], ${failed.map((f) => f.error)}::text[]) AS x(project_id, key, error)
    WHERE d.project_id = x.project_id AND d.key = x.key`.execute(trx);
}

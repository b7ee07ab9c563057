import { type Kysely, sql, type Transaction } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { uuidV7 } from '../../lib/uuid.js';
import { isPrivateKey, type StoredObject } from './storage.js';
import { uploadStorage } from './storage-of.js';
import { enqueueDeletionJob, insertPendingDeletion } from './uploads.repo.js';

/**
 * Private objects in the uploads storage (docs/uploads.md "Private objects"): bytes other modules
 * keep (the attachments of received mail) that /files/:key never serves — their keys,
 * `private/<uuid v7>`, are not image keys. Read only through {@link getPrivateObject}, behind the
 * owner module's authenticated route. The same deletion queue as images: an object is written
 * after a pending deletion is recorded (removed by the `uploads-delete` job two hours later unless
 * {@link keepPrivateObjects} takes it back in the owner's committing transaction), so a write whose
 * transaction rolls back (or a duplicate message) leaves no object behind for long.
 */
const PENDING_SECONDS = 2 * 3600;

/** Writes `data` as a new private object of the project; its key. */
export async function putPrivateObject(deps: { config: Config; db: Kysely<Database> }, projectId: string, data: Buffer): Promise<string> {
  const key = `private/${uuidV7()}`;
  await insertPendingDeletion(deps.db, { projectId, key, delaySeconds: PENDING_SECONDS });
  await uploadStorage(deps.config).put(key, data, 'application/octet-stream');
  return key;
}

/**
 * Keeps the objects (their owner's rows commit with this transaction). Throws when the deletion
 * queue already took one (it may be gone from storage): the caller's transaction must roll back.
 */
export async function keepPrivateObjects(trx: Transaction<Database>, projectId: string, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  const { rows } = await sql<{ key: string }>`
    DELETE FROM upload_deletions WHERE project_id = ${projectId}::uuid AND key = ANY(${keys}::text[]) RETURNING key`.execute(trx);
  if (rows.length !== new Set(keys).size) throw new Error(`${new Set(keys).size - rows.length} private object(s) of ${projectId} were already taken by the deletion queue`);
}

/** A private object's bytes; undefined when there is none (or `key` is not a private key). */
export async function getPrivateObject(config: Config, key: string): Promise<StoredObject | undefined> {
  if (!isPrivateKey(key)) return undefined;
  return uploadStorage(config).get(key);
}

/**
 * Queues the deletion of the project's private objects named by `keys` (the owner deletes their
 * rows in the same transaction: a project reset or deletion). Set-based: one statement.
 */
export async function queuePrivateObjectDeletion(trx: Transaction<Database>, projectId: string, keys: readonly string[]): Promise<number> {
  const valid = keys.filter(isPrivateKey);
  if (valid.length === 0) return 0;
  const { rows } = await sql<{ n: number }>`
    WITH queued AS (
      INSERT INTO upload_deletions (project_id, key) SELECT ${projectId}::uuid, k FROM unnest(${valid}::text[]) AS k
      ON CONFLICT (project_id, key) DO UPDATE SET not_before = now()
      RETURNING 1)
    SELECT count(*)::int AS n FROM queued`.execute(trx);
  await enqueueDeletionJob(trx);
  return rows[0]?.n ?? 0;
}

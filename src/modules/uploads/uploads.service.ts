import type { Kysely } from 'kysely';
import type { Config } from '../../config.js';
import type { Database, UploadRow } from '../../db/schema.js';
import { ApiError, notFound, validationError } from '../../http/errors.js';
import { isUuid, uuidV7 } from '../../lib/uuid.js';
import { IMAGE_FORMATS, MAX_IMAGE_BYTES, processImage } from './image.js';
import { uploadStorage } from './storage-of.js';
import { messageOf } from './storage.js';
import {
  deletePendingDeletion,
  deleteUpload,
  findUsage,
  insertPendingDeletion,
  insertUpload,
  listUploadPage,
  lockProjectForUpload,
  takePendingDeletion,
} from './uploads.repo.js';
import type { ListUploadsQuery, Upload, UploadList, UploadUsage } from './uploads.schema.js';

/**
 * How long an upload may take between recording its key and committing its row (one object
 * write and one short transaction; the file was received and processed before): after that the
 * deletion queue removes the object, which is how an upload that crashed in between is cleaned up.
 */
const PENDING_SECONDS = 2 * 3600;

/** Longest file name kept (longer names are cut, keeping the extension). */
const MAX_FILENAME = 255;

interface Deps {
  config: Config;
  db: Kysely<Database>;
  /** Where failed clean-ups are reported (the request's logger). */
  log?: { warn: (obj: object, msg: string) => void };
}

export const fileUrl = (config: Config, key: string) => `${config.publicUrl}/files/${key}`;

export function rowToUpload(config: Config, row: UploadRow): Upload {
  return {
    id: row.id,
    url: fileUrl(config, row.key),
    key: row.key,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    width: row.width,
    height: row.height,
    createdAt: row.created_at.toISOString(),
  };
}

/** The uploaded name for display: no folders, no control characters, at most 255 characters; a default when empty. */
export function cleanFilename(raw: string | undefined, ext: string): string {
  const base = (raw ?? '').split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f-\u009f]/g, '').trim();
  if (!clean) return `image.${ext}`;
  if (clean.length <= MAX_FILENAME) return clean;
  const dot = clean.lastIndexOf('.');
  const suffix = dot > 0 && clean.length - dot <= 10 ? clean.slice(dot) : '';
  return clean.slice(0, MAX_FILENAME - suffix.length) + suffix;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

const quotaExceeded = (used: number, quota: number, size: number) =>
  new ApiError(
    403,
    'UPLOAD_QUOTA_EXCEEDED',
    `The project's image storage quota of ${mb(quota)} is used up: ${mb(used)} stored, this image needs ${mb(size)}. Nothing was stored`,
    {
      details: { quotaBytes: quota, usedBytes: used, requestedBytes: size },
      suggestion: 'Delete images the project no longer uses (GET /uploads, DELETE /uploads/:id), or ask the operator to raise UPLOAD_QUOTA_MB',
    },
  );

/**
 * POST /uploads/image: checks and re-encodes the image, writes it to storage and records it,
 * within the project's quota. Order (docs/uploads.md "Deletion"): quota pre-check, pending
 * deletion of the key, the object written, then one transaction (the project's upload lock, the
 * pending deletion taken back, the quota checked again under the lock, the row); a refusal after
 * the write removes the object again. `field` names the form field in a 422.
 */
export async function uploadImage(deps: Deps, input: { projectId: string; filename: string | undefined; bytes: Buffer; field: string }): Promise<Upload> {
  const { config, db } = deps;
  const quota = config.uploads.quotaBytes;
  const image = await processImage(input.bytes, input.field);
  const size = image.data.length;
  // Early answer without writing anything; the binding check is under the lock below.
  const before = await findUsage(db, input.projectId);
  if (before.bytes + size > quota) throw quotaExceeded(before.bytes, quota, size);

  const { ext, contentType } = IMAGE_FORMATS[image.format];
  const id = uuidV7();
  const key = `${id}.${ext}`;
  const storage = uploadStorage(config);
  await insertPendingDeletion(db, { projectId: input.projectId, key, delaySeconds: PENDING_SECONDS });
  await storage.put(key, image.data, contentType);
  try {
    const row = await db.transaction().execute(async (trx) => {
      if (!(await lockProjectForUpload(trx, input.projectId))) throw notFound('Project');
      if (!(await takePendingDeletion(trx, input.projectId, key))) {
        throw new Error(`upload ${key} outlived its pending deletion (more than ${PENDING_SECONDS} s)`);
      }
      const usage = await findUsage(trx, input.projectId);
      if (usage.bytes + size > quota) throw quotaExceeded(usage.bytes, quota, size);
      return insertUpload(trx, {
        project_id: input.projectId,
        id,
        key,
        filename: cleanFilename(input.filename, ext),
        content_type: contentType,
        size,
        width: image.width,
        height: image.height,
      });
    });
    return rowToUpload(config, row);
  } catch (err) {
    // A refusal rolled the transaction back: the object goes now. Anything else (a lost
    // connection, even during COMMIT) leaves it to the pending deletion, which exists exactly
    // when the row did not commit.
    if (err instanceof ApiError) await discard(deps, input.projectId, key);
    throw err;
  }
}

/** Removes the object of a refused upload; when that fails, its pending deletion stays and the queue removes it. */
async function discard(deps: Deps, projectId: string, key: string): Promise<void> {
  try {
    const failures = await uploadStorage(deps.config).deleteMany([key]);
    if (failures.length === 0) await deletePendingDeletion(deps.db, projectId, key);
  } catch (err) {
    deps.log?.warn({ key, err: messageOf(err) }, 'upload clean-up failed; the deletion queue will remove the object');
  }
}

// ---- GET /uploads: cursor = base64url of the last id of the page ----

const badCursor = () => validationError([{ field: 'cursor', message: 'Malformed cursor: pass the cursor of the previous page as is', code: 'invalid_string' }]);

function decodeCursor(cursor: string): string {
  const id = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!isUuid(id)) throw badCursor();
  return id;
}

/** GET /uploads: the project's images, newest first. */
export async function listUploads(deps: Deps, projectId: string, query: ListUploadsQuery): Promise<UploadList> {
  const beforeId = query.cursor ? decodeCursor(query.cursor) : undefined;
  const [rows, usage] = await Promise.all([
    listUploadPage(deps.db, projectId, { beforeId, limit: query.limit + 1 }),
    beforeId ? undefined : findUsage(deps.db, projectId),
  ]);
  const hasMore = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    data: page.map((r) => rowToUpload(deps.config, r)),
    cursor: hasMore && last ? Buffer.from(last.id).toString('base64url') : null,
    hasMore,
    total: usage?.files ?? 0,
  };
}

/** GET /uploads/usage. */
export async function getUsage(deps: Deps, projectId: string): Promise<UploadUsage> {
  const usage = await findUsage(deps.db, projectId);
  return { usedBytes: usage.bytes, quotaBytes: deps.config.uploads.quotaBytes, files: usage.files, maxFileBytes: MAX_IMAGE_BYTES };
}

/**
 * DELETE /uploads/:id: the row goes now (the quota is freed at once), the object right after the
 * commit (the deletion queue). Emails already sent that show the image lose it.
 */
export async function removeUpload(deps: Deps, projectId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Upload');
  const deleted = await deps.db.transaction().execute((trx) => deleteUpload(trx, projectId, id));
  if (!deleted) throw notFound('Upload');
}

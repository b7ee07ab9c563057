import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { putPrivateObject } from '../uploads/index.js';
import { attachmentBytesOf } from './inbound-mail.repo.js';
import type { ReceivedMail } from './parse/received.js';

/**
 * Storing the attachments of received mail (INBOUND_STORE_ATTACHMENTS, docs/bounces.md
 * "Attachments"): each attachment's decoded bytes become a private object of the uploads storage
 * (local DATA_DIR/uploads/private or the S3 bucket under `private/`), never served by /files/:key.
 */

/** Default per-attachment cap (decoded bytes). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** Default cap on the stored attachments of one message (decoded bytes, in order: later ones past it are not stored). */
export const MAX_MESSAGE_ATTACHMENT_BYTES = 25 * 1024 * 1024;

export interface AttachmentStoring {
  config: Config;
  /** Per attachment; default {@link MAX_ATTACHMENT_BYTES}. */
  maxAttachmentBytes?: number;
  /** Per message; default {@link MAX_MESSAGE_ATTACHMENT_BYTES}. */
  maxMessageBytes?: number;
}

/** One attachment's row of inbound_attachments, before its message row exists. */
export interface AttachmentRecord {
  index: number;
  filename: string | null;
  contentType: string;
  size: number;
  stored: boolean;
  reason: string | null;
  key: string | null;
  sha256: string | null;
}

const mb = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 100) / 100} MB`;

/**
 * Stores the message's attachments for one project, in order, within the caps: an attachment over
 * the per-attachment cap, past the per-message cap, or over the project's attachment quota (the
 * uploads quota, UPLOAD_QUOTA_MB, counted apart from images) is recorded with `stored: false` and
 * the reason. The objects are written before the message's transaction; the caller keeps them in
 * it (keepPrivateObjects), else the deletion queue removes them two hours later.
 */
export async function storeAttachments(db: Kysely<Database>, opts: AttachmentStoring, projectId: string, mail: ReceivedMail): Promise<AttachmentRecord[]> {
  const maxEach = opts.maxAttachmentBytes ?? MAX_ATTACHMENT_BYTES;
  const maxMessage = opts.maxMessageBytes ?? MAX_MESSAGE_ATTACHMENT_BYTES;
  const quota = opts.config.uploads.quotaBytes;
  // Read once per message: concurrent messages of one project may pass the quota by at most their own attachments.
  let used = mail.attachments.length > 0 ? await attachmentBytesOf(db, projectId) : 0;
  let inMessage = 0;
  const records: AttachmentRecord[] = [];
  for (const [index, a] of mail.attachments.entries()) {
    const data = mail.attachmentContents[index] ?? Buffer.alloc(0);
    const size = data.length;
    const base = { index, filename: a.filename, contentType: a.contentType, size };
    let reason: string | null = null;
    if (size > maxEach) reason = `larger than the per-attachment limit of ${mb(maxEach)}`;
    else if (inMessage + size > maxMessage) reason = `past the per-message limit of ${mb(maxMessage)} of stored attachments`;
    else if (used + size > quota) reason = `the project's attachment storage quota of ${mb(quota)} is used up`;
    if (reason) {
      records.push({ ...base, stored: false, reason, key: null, sha256: null });
      continue;
    }
    const key = await putPrivateObject({ config: opts.config, db }, projectId, data);
    inMessage += size;
    used += size;
    records.push({ ...base, stored: true, reason: null, key, sha256: createHash('sha256').update(data).digest('hex') });
  }
  return records;
}

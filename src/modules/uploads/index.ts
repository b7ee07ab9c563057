/**
 * The uploads module's facade: image uploads for template bodies, their storage (local disk or
 * S3-compatible) and the deletion queue (docs/uploads.md). Project reset and deletion call
 * {@link queueProjectFileDeletion} in their transaction; the `uploads-delete` job calls
 * {@link drainUploadDeletions}.
 */
import type { Config } from '../../config.js';
import { IMAGE_FORMATS, MAX_IMAGE_BYTES } from './image.js';
import { uploadStorage } from './storage-of.js';

export { MAX_IMAGE_BYTES } from './image.js';
export { queueProjectDeletions as queueProjectFileDeletion } from './uploads.repo.js';
export { drainUploadDeletions, type DrainResult } from './deletions.service.js';
// Private objects (attachments of received mail): never served by /files/:key.
export { getPrivateObject, keepPrivateObjects, putPrivateObject, queuePrivateObjectDeletion } from './private.js';

/** What /config says about uploads. */
export interface UploadsFeature {
  storage: 'local' | 's3';
  maxFileBytes: number;
  quotaBytes: number;
  formats: string[];
}

export function uploadsFeature(config: Config): UploadsFeature {
  return {
    storage: uploadStorage(config).kind,
    maxFileBytes: MAX_IMAGE_BYTES,
    quotaBytes: config.uploads.quotaBytes,
    formats: Object.values(IMAGE_FORMATS).map((f) => f.contentType),
  };
}

export { filesRoutes } from './files.routes.js';
export { uploadsRoutes } from './uploads.routes.js';

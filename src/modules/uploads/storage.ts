import type { Readable } from 'node:stream';

/**
 * Where uploaded images are kept: local disk under DATA_DIR/uploads by default, an S3-compatible
 * bucket when S3_BUCKET is set (docs/uploads.md "Storage"). Objects are immutable: a key is
 * written once, read many times, deleted once.
 */

/**
 * A stored object's name: `<uuid v7>.<ext>`. Checked here and by every storage before any path or
 * request is built from it, so no key can reach outside the storage (no `/`, no `..`).
 */
export const KEY_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.(jpg|png|gif|webp)$/;

export const isStorageKey = (key: string): boolean => KEY_PATTERN.test(key);

/**
 * A private object's name: `private/<uuid v7>` (attachments of received mail, private.ts). Never
 * served by /files/:key (which takes only {@link KEY_PATTERN}, and a path segment holds no `/`).
 */
export const PRIVATE_KEY_PATTERN = /^private\/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const isPrivateKey = (key: string): boolean => PRIVATE_KEY_PATTERN.test(key);

/** The message of anything thrown (for logs and the deletion queue's `last_error`). */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function assertStorageKey(key: string): void {
  if (!isStorageKey(key) && !isPrivateKey(key)) throw new Error(`not a storage key: ${JSON.stringify(key)}`);
}

/** An object's size (bytes). */
export interface ObjectInfo {
  size: number;
}

/** An object being read. */
export interface StoredObject extends ObjectInfo {
  body: Readable;
}

/** One key that could not be deleted, with the storage's reason. */
export interface DeleteFailure {
  key: string;
  error: string;
}

export interface UploadStorage {
  /** `local` or `s3` (reported by /config). */
  readonly kind: 'local' | 's3';
  /** Writes the whole object, or nothing: a reader never sees part of it. */
  put(key: string, data: Buffer, contentType: string): Promise<void>;
  /** undefined when there is no such object. */
  head(key: string): Promise<ObjectInfo | undefined>;
  /** undefined when there is no such object. */
  get(key: string): Promise<StoredObject | undefined>;
  /** Deletes the objects; a key already gone is not a failure. Throws when the storage cannot be reached at all. */
  deleteMany(keys: readonly string[]): Promise<DeleteFailure[]>;
  /** Removes what interrupted writes left behind, older than `olderThanMs` (local temp files); returns how many. */
  sweep(olderThanMs: number): Promise<number>;
}

/** `Cache-Control` of every served image: keys are never reused, so the bytes never change. */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';

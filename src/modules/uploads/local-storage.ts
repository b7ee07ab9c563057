import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { assertStorageKey, isPrivateKey, type DeleteFailure, messageOf, type ObjectInfo, type StoredObject, type UploadStorage } from './storage.js';

/** Folder of writes in progress, inside the storage folder (same file system: rename is atomic). */
const TEMP = '.tmp';

const isMissing = (err: unknown) => typeof err === 'object' && err !== null && 'code' in err && (err.code === 'ENOENT' || err.code === 'ENOTDIR');

/**
 * Local disk under `dir` (DATA_DIR/uploads): `<dir>/<2 hex chars>/<key>`, the two characters being
 * the last of the key's random part (256 folders of even size). A write goes to `<dir>/.tmp`, is
 * flushed to disk, then renamed into place: a crash leaves a temp file (removed by `sweep`), never
 * a partial image under a served name. Private objects (attachments) live under `<dir>/private/`.
 */
export function createLocalStorage(dir: string): UploadStorage {
  const root = path.resolve(dir);
  const temp = path.join(root, TEMP);
  const fileOf = (key: string) => {
    assertStorageKey(key);
    // Private objects (`private/<uuid>`): <dir>/private/<2 hex chars>/<uuid>, apart from the images.
    if (isPrivateKey(key)) return path.join(root, 'private', key.slice(42, 44), key.slice(8));
    return path.join(root, key.slice(34, 36), key);
  };

  async function stats(key: string): Promise<ObjectInfo | undefined> {
    try {
      const s = await stat(fileOf(key));
      return s.isFile() ? { size: s.size } : undefined;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  return {
    kind: 'local',

    async put(key, data) {
      const target = fileOf(key);
      await mkdir(temp, { recursive: true });
      await mkdir(path.dirname(target), { recursive: true });
      const tmp = path.join(temp, `${path.basename(target)}.${randomUUID()}`);
      const handle = await open(tmp, 'wx', 0o644);
      try {
        await handle.writeFile(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      try {
        await rename(tmp, target);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    },

    head: stats,

    async get(key): Promise<StoredObject | undefined> {
      const info = await stats(key);
      if (!info) return undefined;
      // Deleted between the stat and the open: the stream fails, the answer is cut (rare, harmless).
      return { ...info, body: createReadStream(fileOf(key)) };
    },

    async deleteMany(keys) {
      const failures: DeleteFailure[] = [];
      for (const key of keys) {
        try {
          await rm(fileOf(key), { force: true });
        } catch (err) {
          failures.push({ key, error: messageOf(err) });
        }
      }
      return failures;
    },

    async sweep(olderThanMs) {
      let names: string[];
      try {
        names = await readdir(temp);
      } catch (err) {
        if (isMissing(err)) return 0;
        throw err;
      }
      let removed = 0;
      for (const name of names) {
        const file = path.join(temp, name);
        try {
          if (Date.now() - (await stat(file)).mtimeMs < olderThanMs) continue;
          await rm(file, { force: true });
          removed++;
        } catch (err) {
          if (!isMissing(err)) throw err;
        }
      }
      return removed;
    },
  };
}

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidV7 } from '../../../src/lib/uuid.js';
import { createLocalStorage } from '../../../src/modules/uploads/local-storage.js';
import type { UploadStorage } from '../../../src/modules/uploads/storage.js';

/** Local storage on its own (src/modules/uploads/local-storage.ts): layout, atomic writes, the key guard. */

let dir: string;
let storage: UploadStorage;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'uploads-storage-'));
  storage = createLocalStorage(path.join(dir, 'uploads'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('local storage', () => {
  it('writes under <2 random hex chars>/<key>, reads it back, deletes it (twice without error)', async () => {
    const key = `${uuidV7()}.png`;
    await storage.put(key, Buffer.from('bytes'), 'image/png');
    expect(await readFile(path.join(dir, 'uploads', key.slice(34, 36), key), 'utf8')).toBe('bytes');
    expect(await storage.head(key)).toEqual({ size: 5 });
    const object = await storage.get(key);
    expect(object && (await text(object.body))).toBe('bytes');
    // Nothing left in the temp folder after a completed write.
    expect(await readdir(path.join(dir, 'uploads', '.tmp'))).toEqual([]);
    expect(await storage.deleteMany([key, key])).toEqual([]);
    expect(await storage.head(key)).toBeUndefined();
    expect(await storage.get(key)).toBeUndefined();
  });

  it('refuses anything that is not a key before building a path (no traversal even if a caller forgot to check)', async () => {
    for (const bad of ['../secret.png', `../${uuidV7()}.png`, `${uuidV7()}.svg`, `${uuidV7()}.png/..`, '.tmp', '', `${uuidV7().toUpperCase()}.png`]) {
      await expect(storage.put(bad, Buffer.from('x'), 'image/png'), bad).rejects.toThrow(/not a storage key/);
      await expect(storage.head(bad), bad).rejects.toThrow(/not a storage key/);
      await expect(storage.get(bad), bad).rejects.toThrow(/not a storage key/);
      expect((await storage.deleteMany([bad]))[0]?.error, bad).toMatch(/not a storage key/);
    }
  });
});

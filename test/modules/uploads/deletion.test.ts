import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidV7 } from '../../../src/lib/uuid.js';
import { drainUploadDeletions } from '../../../src/modules/uploads/index.js';
import { bearer, newProject, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createUploadTestApp, fetchFile, fileExists, localPath, png, upload, type UploadTestApp } from './helpers.js';

/**
 * Files leave storage with their upload, reset or project (docs/uploads.md "Deletion"): through
 * the upload_deletions queue, written in the deleting transaction and drained by the
 * `uploads-delete` job (a real worker here), and the uploads that crashed before committing.
 */

let t: UploadTestApp;
beforeAll(async () => {
  t = await createUploadTestApp();
  await t.runWorker();
});
afterAll(() => t?.close());

const lifecycle = (method: 'DELETE' | 'POST', user: SignedInUser, project: TestProject) =>
  t.app.inject({
    method,
    url: `/users/@me/projects/${project.id}${method === 'POST' ? '/reset' : ''}`,
    headers: { cookie: user.cookie },
    payload: { confirm: project.name },
  });

const gone = (key: string) => until(`${key} removed from storage`, async () => !(await fileExists(localPath(t.dataDir, key))));

describe('deletion', () => {
  it('DELETE /uploads/:id: 204, the row at once, the file right after; the URL answers 404; a second DELETE is 404', async () => {
    const { project } = await newProject(t.app);
    const image = await upload(t.app, project, await png());
    expect(await fileExists(localPath(t.dataDir, image.key))).toBe(true);
    const res = await t.app.inject({ method: 'DELETE', url: `/uploads/${image.id}`, headers: bearer(project.secret) });
    expect(res.statusCode).toBe(204);
    expect(await t.db.db.selectFrom('uploads').select('id').where('id', '=', image.id).execute()).toEqual([]);
    await gone(image.key);
    expect((await t.app.inject({ method: 'GET', url: `/files/${image.key}` })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/uploads/${image.id}`, headers: bearer(project.secret) })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: '/uploads/not-a-uuid', headers: bearer(project.secret) })).statusCode).toBe(404);
  });

  it('deleting a project removes its files (rows cascade; the queue keeps the keys); another project\'s files stay', async () => {
    const { user, project } = await newProject(t.app);
    const other = await newProject(t.app);
    const mine = [await upload(t.app, project, await png()), await upload(t.app, project, await png(20, 20))];
    const theirs = await upload(t.app, other.project, await png());
    const res = await lifecycle('DELETE', user, project);
    expect(res.statusCode, res.body).toBe(204);
    for (const image of mine) await gone(image.key);
    await until('the queue drained', async () => (await t.db.db.selectFrom('upload_deletions').select('key').execute()).length === 0);
    expect(await fetchFile(t.app, theirs.key)).toBeDefined();
  });

  it('resetting a project removes its files and rows; the project uploads again afterwards', async () => {
    const { user, project } = await newProject(t.app);
    const image = await upload(t.app, project, await png());
    const res = await lifecycle('POST', user, project);
    expect(res.statusCode, res.body).toBe(200);
    expect(await t.db.db.selectFrom('uploads').select('id').where('project_id', '=', project.id).execute()).toEqual([]);
    await gone(image.key);
    await upload(t.app, project, await png());
  });

  it('a failed deletion (a key the project deleted in a transaction that rolled back) removes nothing', async () => {
    const { project } = await newProject(t.app);
    const image = await upload(t.app, project, await png());
    await t.db.db
      .transaction()
      .execute(async (trx) => {
        await sql`DELETE FROM uploads WHERE id = ${image.id}`.execute(trx);
        await sql`INSERT INTO upload_deletions (project_id, key) VALUES (${project.id}, ${image.key})`.execute(trx);
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    await drainUploadDeletions(t.deps);
    expect(await fileExists(localPath(t.dataDir, image.key))).toBe(true);
  });
});

describe('the queue', () => {
  /** Stops the worker for `fn`: the test runs the drain itself. */
  const manually = (fn: () => Promise<void>) => t.withWorkerStopped(fn);

  it('removes the object of an upload that never committed (a crash after the write), once its pending deletion is due', async () => {
    await manually(async () => {
      const { project } = await newProject(t.app);
      const key = `${uuidV7()}.png`;
      const file = localPath(t.dataDir, key);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, await png());
      await sql`INSERT INTO upload_deletions (project_id, key, not_before) VALUES (${project.id}, ${key}, now() + interval '2 hours')`.execute(t.db.db);
      // Not due yet: an upload may still be committing it.
      await drainUploadDeletions(t.deps);
      expect(await fileExists(file)).toBe(true);
      await sql`UPDATE upload_deletions SET not_before = now() WHERE key = ${key}`.execute(t.db.db);
      expect((await drainUploadDeletions(t.deps)).deleted).toBe(1);
      expect(await fileExists(file)).toBe(false);
      expect(await t.db.db.selectFrom('upload_deletions').select('key').where('key', '=', key).execute()).toEqual([]);
    });
  });

  it('never removes an object an upload row still names (the row is dropped from the queue)', async () => {
    await manually(async () => {
      const { project } = await newProject(t.app);
      const image = await upload(t.app, project, await png());
      await sql`INSERT INTO upload_deletions (project_id, key) VALUES (${project.id}, ${image.key})`.execute(t.db.db);
      expect((await drainUploadDeletions(t.deps)).deleted).toBe(0);
      expect(await fileExists(localPath(t.dataDir, image.key))).toBe(true);
      expect(await t.db.db.selectFrom('upload_deletions').select('key').where('key', '=', image.key).execute()).toEqual([]);
    });
  });

  it('postpones a key the storage cannot delete (attempts, last_error, later not_before) and deletes the others', async () => {
    await manually(async () => {
      const { project } = await newProject(t.app);
      const stuck = `${uuidV7()}.png`;
      // A folder where the file would be: removing it fails.
      await mkdir(path.join(localPath(t.dataDir, stuck), 'x'), { recursive: true });
      const fine = `${uuidV7()}.png`;
      await sql`INSERT INTO upload_deletions (project_id, key) VALUES (${project.id}, ${stuck}), (${project.id}, ${fine})`.execute(t.db.db);
      const result = await drainUploadDeletions(t.deps);
      expect(result).toMatchObject({ deleted: 1, failed: 1 });
      const row = await t.db.db.selectFrom('upload_deletions').selectAll().where('key', '=', stuck).executeTakeFirstOrThrow();
      expect(row.attempts).toBe(1);
      expect(row.last_error).toBeTruthy();
      expect(row.not_before.getTime()).toBeGreaterThan(Date.now() + 60_000);
      await sql`DELETE FROM upload_deletions WHERE key = ${stuck}`.execute(t.db.db);
    });
  });

  it('removes temp files of interrupted writes older than an hour, and only those', async () => {
    await manually(async () => {
      const temp = path.join(t.dataDir, 'uploads', '.tmp');
      await mkdir(temp, { recursive: true });
      const old = path.join(temp, 'old-write');
      const fresh = path.join(temp, 'fresh-write');
      await writeFile(old, 'partial');
      await writeFile(fresh, 'partial');
      const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
      await utimes(old, twoHoursAgo, twoHoursAgo);
      expect((await drainUploadDeletions(t.deps)).swept).toBe(1);
      expect(await fileExists(old)).toBe(false);
      expect(await fileExists(fresh)).toBe(true);
    });
  });
});

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { until } from '../../helpers/poll.js';
import { createUploadTestApp, noise, postImage, upload, type UploadTestApp } from './helpers.js';

/**
 * The per-project storage quota (docs/uploads.md "Quota"): UPLOAD_QUOTA_MB=1 here, images of
 * ~600 KB (noise: stored at about their raw size), so one fits and two do not.
 */

const QUOTA = 1024 * 1024;
let t: UploadTestApp;
let big: Buffer;
beforeAll(async () => {
  t = await createUploadTestApp({ UPLOAD_QUOTA_MB: '1' });
  big = await noise(450, 450).png().toBuffer();
  expect(big.length).toBeGreaterThan(QUOTA / 2);
  expect(big.length).toBeLessThan(QUOTA);
});
afterAll(() => t?.close());

const usage = async (secret: string) => (await t.app.inject({ method: 'GET', url: '/uploads/usage', headers: bearer(secret) })).json();

async function filesOnDisk(): Promise<number> {
  try {
    const entries = await readdir(path.join(t.dataDir, 'uploads'), { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile() && !e.parentPath.endsWith('.tmp')).length;
  } catch {
    return 0;
  }
}

describe('quota', () => {
  it('refuses an image that would go over it with 403 UPLOAD_QUOTA_EXCEEDED (details, suggestion), storing nothing; a DELETE frees it', async () => {
    const { project } = await newProject(t.app);
    const first = await upload(t.app, project, big);
    expect(await usage(project.secret)).toEqual({ usedBytes: first.size, quotaBytes: QUOTA, files: 1, maxFileBytes: 10 * 1024 * 1024 });
    const disk = await filesOnDisk();

    const res = await postImage(t.app, project, big);
    const error = expectEnvelope(res, 403, 'UPLOAD_QUOTA_EXCEEDED');
    expect(error.message).toMatch(/storage quota of 1\.0 MB is used up: 0\.\d MB stored, this image needs 0\.\d MB/);
    expect(error.details).toEqual({ quotaBytes: QUOTA, usedBytes: first.size, requestedBytes: expect.any(Number) });
    expect(error.suggestion).toMatch(/DELETE \/uploads\/:id/);
    expect(await filesOnDisk()).toBe(disk);
    expect((await usage(project.secret)).files).toBe(1);

    // Another project has its own quota.
    const other = await newProject(t.app);
    await upload(t.app, other.project, big);

    expect((await t.app.inject({ method: 'DELETE', url: `/uploads/${first.id}`, headers: bearer(project.secret) })).statusCode).toBe(204);
    expect((await usage(project.secret)).usedBytes).toBe(0);
    await upload(t.app, project, big);
  });

  it('two concurrent uploads that fit only one between them: exactly one is stored', async () => {
    const { project } = await newProject(t.app);
    const disk = await filesOnDisk();
    // Staged race: the test holds a lock that every INSERT INTO uploads waits for (reads of the
    // table pass), until both uploads are waiting on a lock. Both passed the early check (nothing
    // stored yet); without the project's upload lock both would have summed 0 bytes and insert.
    const gate = await t.db.pool.connect();
    let answers;
    try {
      await gate.query('BEGIN');
      await gate.query('LOCK TABLE uploads IN SHARE ROW EXCLUSIVE MODE');
      const pending = Promise.all([postImage(t.app, project, big), postImage(t.app, project, big)]);
      // Watched from another connection: inside the gate's transaction pg_stat_activity is a snapshot.
      await until('both uploads waiting on a lock', async () => {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(t.db.db);
        return (rows[0]?.n ?? 0) >= 2;
      });
      await gate.query('COMMIT');
      answers = await pending;
    } finally {
      await gate.query('ROLLBACK').catch(() => undefined);
      gate.release();
    }
    const codes = answers.map((a) => a.statusCode).sort();
    expect(codes, answers.map((a) => a.body).join('\n')).toEqual([201, 403]);
    const used = await usage(project.secret);
    expect(used.files).toBe(1);
    expect(used.usedBytes).toBeLessThanOrEqual(QUOTA);
    // The refused one's object was removed again.
    expect(await filesOnDisk()).toBe(disk + 1);
    const pending = await t.db.db.selectFrom('upload_deletions').select('key').where('project_id', '=', project.id).execute();
    expect(pending).toEqual([]);
  });

  it('many concurrent small uploads never go over it', async () => {
    const { project } = await newProject(t.app);
    const small = await noise(150, 150).png().toBuffer();
    const answers = await Promise.all(Array.from({ length: 16 }, () => postImage(t.app, project, small)));
    const stored = answers.filter((a) => a.statusCode === 201);
    expect(answers.every((a) => a.statusCode === 201 || a.statusCode === 403)).toBe(true);
    const used = await usage(project.secret);
    expect(used.files).toBe(stored.length);
    expect(used.usedBytes).toBeLessThanOrEqual(QUOTA);
    expect(used.usedBytes + small.length).toBeGreaterThan(QUOTA - small.length);
  });
});

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBulkJob } from '../../../src/modules/contacts/bulk.service.js';
import { upsertContacts } from '../../../src/modules/contacts/contacts.upsert.js';
import { enqueueJob, insertJob } from '../../../src/modules/contacts/jobs.repo.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { sleep } from '../../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ worker: {} });
});
afterAll(() => t?.close());

interface JobBody {
  id: string;
  kind: string;
  status: string;
  total: number;
  processed: number;
  failed: number;
  errors: { row: number; message: string }[];
}

/** Polls a job status URL until COMPLETED or FAILED, for at most `timeoutMs`. */
async function waitForJob(project: TestProject, url: string, timeoutMs = 15_000): Promise<JobBody> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.app.inject({ method: 'GET', url, headers: bearer(project.secret) });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<JobBody>();
    if (body.status === 'COMPLETED' || body.status === 'FAILED') return body;
    if (Date.now() > deadline) throw new Error(`job not finished within ${timeoutMs} ms: ${res.body}`);
    await sleep(50);
  }
}

async function seed(projectId: string, emails: string[], subscribed = true): Promise<string[]> {
  const rows = await t.db.db
    .transaction()
    .execute((trx) => upsertContacts(trx, projectId, emails.map((email) => ({ email, patch: {}, subscribed, subscribedIfNew: subscribed }))));
  return rows.map((r) => r.row.id);
}

const eventNames = async (contactIds: string[]) =>
  (await t.db.db.selectFrom('events').select(['contact_id', 'name']).where('contact_id', 'in', contactIds).orderBy('id').execute()).map(
    (e) => `${contactIds.indexOf(e.contact_id)}:${e.name}`,
  );

async function post(project: TestProject, path: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: path, headers: bearer(project.secret), payload });
}

describe('POST /contacts/bulk-*', () => {
  it('rejects 0, 1,001 and non-uuid ids with 422 and creates no job', async () => {
    const { project } = await newProject(t.app);
    const ids = Array.from({ length: 1001 }, () => randomUUID());
    for (const path of ['/contacts/bulk-subscribe', '/contacts/bulk-unsubscribe', '/contacts/bulk-delete']) {
      const tooMany = expectEnvelope(await post(project, path, { contactIds: ids }), 422, 'VALIDATION_ERROR');
      expect(tooMany.errors).toEqual([expect.objectContaining({ field: 'contactIds', code: 'too_big' })]);
      const none = expectEnvelope(await post(project, path, { contactIds: [] }), 422, 'VALIDATION_ERROR');
      expect(none.errors).toEqual([expect.objectContaining({ field: 'contactIds', code: 'too_small' })]);
      const bad = expectEnvelope(await post(project, path, { contactIds: [randomUUID(), 'not-a-uuid'] }), 422, 'VALIDATION_ERROR');
      expect(bad.errors).toEqual([expect.objectContaining({ field: 'contactIds.1', code: 'invalid_string' })]);
      expectEnvelope(await post(project, path, {}), 422, 'VALIDATION_ERROR');
    }
    const exactly = await post(project, '/contacts/bulk-subscribe', { contactIds: ids.slice(0, 1000) });
    expect(exactly.statusCode, exactly.body).toBe(202);
    const jobs = await t.db.db.selectFrom('jobs').select(['kind', 'total']).where('project_id', '=', project.id).execute();
    expect(jobs).toEqual([{ kind: 'bulk-subscribe', total: 1000 }]);
  });

  it('unsubscribes and resubscribes the project contacts, recording one event per change', async () => {
    const { project } = await newProject(t.app);
    const ids = await seed(project.id, ['a@example.com', 'b@example.com', 'c@example.com']);
    const [a, b, c] = ids;

    const res = await post(project, '/contacts/bulk-unsubscribe', { contactIds: [a, b] });
    expect(res.statusCode, res.body).toBe(202);
    const { jobId } = res.json<{ jobId: string }>();
    const done = await waitForJob(project, `/contacts/bulk/${jobId}`);
    expect(done).toMatchObject({ id: jobId, kind: 'bulk-unsubscribe', status: 'COMPLETED', total: 2, processed: 2, failed: 0, errors: [] });

    const rows = await t.db.db.selectFrom('contacts').select(['id', 'subscribed']).where('project_id', '=', project.id).orderBy('email').execute();
    expect(rows.map((r) => r.subscribed)).toEqual([false, false, true]);

    // b is already unsubscribed: no second event for it; a and b come back.
    const again = await post(project, '/contacts/bulk-subscribe', { contactIds: [a, b, c] });
    await waitForJob(project, `/contacts/bulk/${again.json<{ jobId: string }>().jobId}`);
    expect((await eventNames(ids)).sort()).toEqual(['0:contact.subscribed', '0:contact.unsubscribed', '1:contact.subscribed', '1:contact.unsubscribed']);
  });

  it('never touches contacts of other projects and reports them and unknown ids as failed rows', async () => {
    const mine = await newProject(t.app);
    const theirs = await newProject(t.app);
    const [own] = await seed(mine.project.id, ['own@example.com']);
    const [foreign] = await seed(theirs.project.id, ['foreign@example.com']);
    const unknown = randomUUID();

    for (const path of ['/contacts/bulk-unsubscribe', '/contacts/bulk-delete']) {
      const res = await post(mine.project, path, { contactIds: [foreign, own, unknown] });
      const job = await waitForJob(mine.project, `/contacts/bulk/${res.json<{ jobId: string }>().jobId}`);
      expect(job).toMatchObject({ status: 'COMPLETED', total: 3, processed: 1, failed: 2 });
      expect(job.errors).toEqual([
        { row: 0, message: expect.stringMatching(/no contact/i) },
        { row: 2, message: expect.stringMatching(/no contact/i) },
      ]);
    }
    const theirRow = await t.db.db.selectFrom('contacts').selectAll().where('id', '=', foreign ?? '').executeTakeFirstOrThrow();
    expect(theirRow.subscribed).toBe(true);
    expect(await eventNames([foreign ?? ''])).toEqual([]);
  });

  it('deletes contacts with their events', async () => {
    const { project } = await newProject(t.app);
    const ids = await seed(project.id, ['x@example.com', 'y@example.com']);
    await seed(project.id, ['x@example.com'], false); // records contact.unsubscribed for x
    expect(await eventNames(ids)).toEqual(['0:contact.unsubscribed']);

    const res = await post(project, '/contacts/bulk-delete', { contactIds: [ids[0]] });
    const job = await waitForJob(project, `/contacts/bulk/${res.json<{ jobId: string }>().jobId}`);
    expect(job).toMatchObject({ kind: 'bulk-delete', status: 'COMPLETED', processed: 1, failed: 0 });
    const left = await t.db.db.selectFrom('contacts').select('email').where('project_id', '=', project.id).execute();
    expect(left).toEqual([{ email: 'y@example.com' }]);
    expect(await eventNames(ids)).toEqual([]);
  });

  it('does nothing when a finished job runs again', async () => {
    const { project } = await newProject(t.app);
    const [id] = await seed(project.id, ['z@example.com']);
    const res = await post(project, '/contacts/bulk-unsubscribe', { contactIds: [id, randomUUID()] });
    const { jobId } = res.json<{ jobId: string }>();
    const first = await waitForJob(project, `/contacts/bulk/${jobId}`);
    await seed(project.id, ['z@example.com'], true); // resubscribed since

    await runBulkJob(t.db.db, jobId);
    const second = await waitForJob(project, `/contacts/bulk/${jobId}`);
    expect(second).toEqual(first);
    const row = await t.db.db.selectFrom('contacts').select('subscribed').where('id', '=', id ?? '').executeTakeFirstOrThrow();
    expect(row.subscribed).toBe(true);
  });

  it('enqueues the task in the same transaction, keyed by the job id, after transactional priority', async () => {
    const { project } = await newProject(t.app);
    const queued = await t.db.db
      .transaction()
      .execute(async (trx) => {
        const jobId = await insertJob(trx, { projectId: project.id, kind: 'bulk-delete', total: 0, payload: { contactIds: [] } });
        await enqueueJob(trx, { jobId, task: 'contacts-bulk', priority: 20 });
        const { rows } = await sql<{ key: string; priority: number; max_attempts: number; payload: unknown }>`
          SELECT key, priority, max_attempts, payload FROM graphile_worker._private_jobs WHERE key = ${jobId}`.execute(trx);
        throw Object.assign(new Error('rollback'), { rows, jobId });
      })
      .catch((err: { rows: unknown[]; jobId: string }) => err);
    expect(queued.rows).toEqual([{ key: queued.jobId, priority: 20, max_attempts: 5, payload: { jobId: queued.jobId } }]);
    // Rolled back together: neither the row nor the queued job remains.
    expect(await t.db.db.selectFrom('jobs').select('id').where('id', '=', queued.jobId).execute()).toEqual([]);
    const { rows } = await sql`SELECT 1 FROM graphile_worker._private_jobs WHERE key = ${queued.jobId}`.execute(t.db.db);
    expect(rows).toEqual([]);
  });
});

describe('a job that keeps failing', () => {
  it('is marked FAILED on its last attempt, with a message that leaks no internals', async () => {
    const { project } = await newProject(t.app);
    const jobId = await t.db.db.transaction().execute(async (trx) => {
      const id = await insertJob(trx, { projectId: project.id, kind: 'bulk-delete', total: 1, payload: { contactIds: 'not-a-list' } });
      await enqueueJob(trx, { jobId: id, task: 'contacts-bulk', priority: 20, maxAttempts: 1 });
      return id;
    });
    const job = await waitForJob(project, `/contacts/bulk/${jobId}`);
    expect(job).toMatchObject({ status: 'FAILED', processed: 0, failed: 0 });
    expect(job.errors).toEqual([{ row: 0, message: expect.stringMatching(/^Processing failed after 1 attempt;/) }]);
    expect(job.errors[0]?.message).not.toMatch(/contactIds|zod|expected/i);
  });
});

describe('GET /contacts/bulk/:jobId', () => {
  it('answers 404 for another project, a malformed or unknown id, and an import job', async () => {
    const mine = await newProject(t.app);
    const theirs = await newProject(t.app);
    const res = await post(theirs.project, '/contacts/bulk-subscribe', { contactIds: [randomUUID()] });
    const { jobId } = res.json<{ jobId: string }>();
    const importJob = await t.db.db
      .transaction()
      .execute((trx) => insertJob(trx, { projectId: mine.project.id, kind: 'import', total: 0 }));
    for (const id of [jobId, 'nope', randomUUID(), importJob]) {
      expectEnvelope(await t.app.inject({ method: 'GET', url: `/contacts/bulk/${id}`, headers: bearer(mine.project.secret) }), 404, 'NOT_FOUND');
    }
    const own = await t.app.inject({ method: 'GET', url: `/contacts/bulk/${jobId}`, headers: bearer(theirs.project.secret) });
    expect(own.statusCode).toBe(200);
    expect(own.json()).toMatchObject({ id: jobId, total: 1, createdAt: expect.any(String), updatedAt: expect.any(String) });
  });

  it('accepts the session cookie with X-Project-Id', async () => {
    const { user, project } = await newProject(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/contacts/bulk-delete',
      headers: { cookie: user.cookie, 'x-project-id': project.id },
      payload: { contactIds: [randomUUID()] },
    });
    expect(res.statusCode, res.body).toBe(202);
    const job = await waitForJob(project, `/contacts/bulk/${res.json<{ jobId: string }>().jobId}`);
    expect(job).toMatchObject({ status: 'COMPLETED', processed: 0, failed: 1 });
  });
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, signUp, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { addVerifiedDomain, createSendTestApp, send, type SendTestApp } from '../emails/helpers.js';
import { deleteProjectData } from '../../../src/modules/projects/lifecycle.repo.js';
import { queuedJobs, seedProjectData, wipedCounts } from './lifecycle-helpers.js';

/**
 * DELETE /users/@me/projects/:id and POST /users/@me/projects/:id/reset (docs/projects.md "Reset
 * and delete"): OWNER only, confirmed with the project's name, one transaction each. No worker
 * runs in this file: queued jobs stay queued, so the test can see which the reset removed.
 */

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(() => t?.close());

const call = (method: 'DELETE' | 'POST', user: SignedInUser, project: TestProject, payload?: object) =>
  t.app.inject({ method, url: `/users/@me/projects/${project.id}${method === 'POST' ? '/reset' : ''}`, headers: { cookie: user.cookie }, payload });

const projectRow = (id: string) => t.db.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();

describe.each(['DELETE', 'POST'] as const)('%s confirmation and roles', (method) => {
  it('needs {confirm: <the name>}: missing or wrong is 422 naming confirm, and nothing changes', async () => {
    const { user, project } = await newProject(t.app);
    await seedProjectData(t.db, project.id, 3);
    for (const payload of [undefined, {}, { confirm: 'Test projec' }, { confirm: 'test project' }, { confirm: 7 }]) {
      const res = await call(method, user, project, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error).toMatchObject({ code: 'VALIDATION_ERROR' });
      expect(res.json().error.errors[0].field).toBe('confirm');
    }
    expect(await projectRow(project.id)).toBeDefined();
    expect((await wipedCounts(t.db, project.id)).contacts).toBe(3);
  });

  it('is OWNER only: ADMIN and MEMBER get 403, a stranger 404, with the right name', async () => {
    const { project } = await newProject(t.app);
    await seedProjectData(t.db, project.id, 2);
    for (const role of ['ADMIN', 'MEMBER'] as const) {
      const u = await signUp(t.app);
      await t.db.db.insertInto('memberships').values({ project_id: project.id, user_id: u.id, role }).execute();
      expect((await call(method, u, project, { confirm: project.name })).statusCode, role).toBe(403);
    }
    expect((await call(method, await signUp(t.app), project, { confirm: project.name })).statusCode).toBe(404);
    expect((await wipedCounts(t.db, project.id)).contacts).toBe(2);
  });
});

describe('reset', () => {
  it('wipes every kind of project data and its queued jobs; keeps the project, keys, members, domains, suppressions; other projects untouched', async () => {
    const { user, project } = await newProject(t.app);
    const other = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    const jobs = await seedProjectData(t.db, project.id);
    const otherJobs = await seedProjectData(t.db, other.project.id);
    const otherBefore = await wipedCounts(t.db, other.project.id);
    expect(Object.values(otherBefore).every((n) => n > 0), JSON.stringify(otherBefore)).toBe(true);

    const res = await call('POST', user, project, { confirm: ' Test project ' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: project.id, name: project.name, public: project.public, secret: project.secret, role: 'OWNER' });

    const after = await wipedCounts(t.db, project.id);
    expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([]);
    expect(await queuedJobs(t.db, jobs)).toEqual([]);
    expect(await t.db.db.selectFrom('domains').select('domain').where('project_id', '=', project.id).execute()).toEqual([{ domain }]);
    expect(await t.db.db.selectFrom('memberships').select('user_id').where('project_id', '=', project.id).execute()).toEqual([{ user_id: user.id }]);
    expect(await t.db.db.selectFrom('suppressions').select('email').where('project_id', '=', project.id).execute()).toEqual([{ email: 'bounced@seed.example' }]);
    // The keys still work, on an empty project.
    const list = await t.app.inject({ method: 'GET', url: '/contacts', headers: bearer(project.secret) });
    expect(list.statusCode).toBe(200);
    expect(list.json().contacts ?? list.json().data).toEqual([]);

    expect(await wipedCounts(t.db, other.project.id)).toEqual(otherBefore);
    expect((await queuedJobs(t.db, otherJobs)).sort()).toEqual([...otherJobs].sort());
  });
});

describe('reset without foreign-key triggers', () => {
  it('skips them only where the wipe deletes every referencing row itself; a table it does not know makes it take the checked path', async () => {
    const { project } = await newProject(t.app);
    await seedProjectData(t.db, project.id, 3);
    const fast = await t.db.db.transaction().execute((trx) => deleteProjectData(trx, project.id));
    expect(fast.skippedTriggers).toBe(true);

    // A table of some later feature that references contacts: its rows must go with them.
    await sql`
      CREATE TABLE lifecycle_test_refs (
        contact_id uuid NOT NULL, project_id uuid NOT NULL,
        FOREIGN KEY (contact_id, project_id) REFERENCES contacts (id, project_id) ON DELETE CASCADE
      )`.execute(t.db.db);
    try {
      const { user, project: p2 } = await newProject(t.app);
      await seedProjectData(t.db, p2.id, 3);
      await sql`INSERT INTO lifecycle_test_refs SELECT id, project_id FROM contacts WHERE project_id = ${p2.id}`.execute(t.db.db);
      expect((await call('POST', user, p2, { confirm: p2.name })).statusCode).toBe(200);
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM lifecycle_test_refs`.execute(t.db.db);
      expect(rows[0]?.n).toBe(0);
      expect((await wipedCounts(t.db, p2.id)).contacts).toBe(0);
    } finally {
      await sql`DROP TABLE lifecycle_test_refs`.execute(t.db.db);
    }
  });
});

describe('reset as a deadlock victim', () => {
  it('runs again when PostgreSQL aborts it to break a deadlock with a writer of the project', async () => {
    const { user, project } = await newProject(t.app);
    await seedProjectData(t.db, project.id, 3);
    const writer = await t.db.pool.connect();
    try {
      // A writer holds a contact the reset must delete, then writes an event of the project,
      // which waits for the project row the reset holds: a deadlock. The reset waited first, so
      // PostgreSQL's check (after deadlock_timeout, 1 s) runs in the reset and aborts it.
      await writer.query('BEGIN');
      const { rows } = await writer.query<{ id: string }>('SELECT id FROM contacts WHERE project_id = $1 LIMIT 1 FOR UPDATE', [project.id]);
      const reset = call('POST', user, project, { confirm: project.name });
      await until('the reset waits for the locked contact', async () => {
        const { rows: waiting } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'delete from "contacts"%'`.execute(t.db.db);
        return (waiting[0]?.n ?? 0) > 0;
      });
      await writer.query(`INSERT INTO events (project_id, contact_id, name) VALUES ($1, $2, 'raced')`, [project.id, rows[0]?.id]);
      await writer.query('COMMIT');
      const res = await reset;
      expect(res.statusCode, res.body).toBe(200);
    } finally {
      writer.release();
    }
    // The writer committed first, so the retried reset wiped its event too.
    expect(Object.entries(await wipedCounts(t.db, project.id)).filter(([, n]) => n > 0)).toEqual([]);
  });
});

describe('delete', () => {
  it('removes the project and everything of it; its keys stop working at once; other projects untouched', async () => {
    const { user, project } = await newProject(t.app);
    const other = await newProject(t.app);
    await addVerifiedDomain(t, project.id);
    const jobs = await seedProjectData(t.db, project.id);
    const otherJobs = await seedProjectData(t.db, other.project.id);
    const otherBefore = await wipedCounts(t.db, other.project.id);

    const res = await call('DELETE', user, project, { confirm: project.name });
    expect(res.statusCode, res.body).toBe(204);
    expect(await projectRow(project.id)).toBeUndefined();
    expect(Object.entries(await wipedCounts(t.db, project.id)).filter(([, n]) => n > 0)).toEqual([]);
    for (const table of ['memberships', 'domains', 'suppressions', 'project_send_slots'] as const) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE project_id = ${project.id}`.execute(t.db.db);
      expect(rows[0]?.n, table).toBe(0);
    }
    expect(await queuedJobs(t.db, jobs)).toEqual([]);
    for (const key of [project.secret, project.public]) {
      const r = await t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(key), payload: { email: 'a@b.example', event: 'x' } });
      expect(r.statusCode).toBe(401);
      expect(r.json().error.code).toBe('INVALID_API_KEY');
    }
    expect(await wipedCounts(t.db, other.project.id)).toEqual(otherBefore);
    expect((await queuedJobs(t.db, otherJobs)).sort()).toEqual([...otherJobs].sort());
  });
});

describe('reset under concurrent writes', () => {
  it('nothing of the project survives that was accepted before; what lands after is whole; other projects untouched', async () => {
    const { user, project } = await newProject(t.app);
    const other = await newProject(t.app);
    const from = `a@${(await addVerifiedDomain(t, project.id)).domain}`;
    // Enough rows that the reset takes a while, so the writes below overlap it.
    await seedProjectData(t.db, project.id, 20_000);

    type Write = { kind: 'track' | 'send' | 'other'; email: string; sentAt: number; doneAt: number; status: number };
    const writes: Write[] = [];
    let resetStarted = Infinity;
    let resetDone = Infinity;
    const write = async (kind: Write['kind'], i: number) => {
      const email = `${kind}${i}@race.example`;
      const sentAt = performance.now();
      const res =
        kind === 'send'
          ? await send(t.app, project, { to: email, from, subject: 's', body: 'b', subscribed: true })
          : await t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(kind === 'other' ? other.project.public : project.public), payload: { email, event: 'race' } });
      writes.push({ kind, email, sentAt, doneAt: performance.now(), status: res.statusCode });
    };
    // Writers run until the reset has answered, plus a few after.
    let stop = false;
    const writer = async (kind: Write['kind']) => {
      let i = 0;
      let after = 0;
      const deadline = Date.now() + 20_000;
      while (after < 5 && Date.now() < deadline) {
        if (stop) after++;
        await write(kind, i++);
      }
    };
    const writers = Promise.all([writer('track'), writer('send'), writer('other')]);
    while (writes.filter((w) => w.kind !== 'other').length < 10) await new Promise((r) => setTimeout(r, 5));
    resetStarted = performance.now();
    const res = await call('POST', user, project, { confirm: project.name });
    resetDone = performance.now();
    stop = true;
    await writers;
    expect(res.statusCode, res.body).toBe(200);
    expect(writes.every((w) => w.status === 200), JSON.stringify(writes.filter((w) => w.status !== 200).slice(0, 3))).toBe(true);

    const mine = writes.filter((w) => w.kind !== 'other');
    const before = mine.filter((w) => w.doneAt < resetStarted);
    const after = mine.filter((w) => w.sentAt > resetDone);
    const during = mine.filter((w) => !before.includes(w) && !after.includes(w));
    expect(before.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);

    const contacts = new Map(
      (await t.db.db.selectFrom('contacts').select(['id', 'email']).where('project_id', '=', project.id).execute()).map((c) => [c.email, c.id]),
    );
    const events = await t.db.db.selectFrom('events').select(['contact_id', 'name']).where('project_id', '=', project.id).execute();
    const emails = await t.db.db.selectFrom('emails').select(['id', 'to_email', 'contact_id']).where('project_id', '=', project.id).execute();
    // Accepted before the reset began: wiped, all of it.
    for (const w of before) expect(contacts.has(w.email), `${w.email} answered before the reset`).toBe(false);
    // Sent after it answered: there, whole.
    for (const w of after) expect(contacts.has(w.email), `${w.email} sent after the reset`).toBe(true);
    // Whatever survived is whole, whenever it was sent: each track's contact with its event, each
    // send's contact with its email and its queued job; and nothing of the seed survived.
    const ids = new Set(contacts.values());
    expect(events.every((e) => ids.has(e.contact_id) && e.name === 'race')).toBe(true);
    expect(emails.every((e) => e.contact_id !== null && ids.has(e.contact_id))).toBe(true);
    for (const w of [...during, ...after]) {
      const id = contacts.get(w.email);
      if (id === undefined) continue;
      if (w.kind === 'track') expect(events.some((e) => e.contact_id === id), w.email).toBe(true);
      if (w.kind === 'send') expect(emails.some((e) => e.contact_id === id), w.email).toBe(true);
    }
    const { rows: jobs } = await sql<{ id: string }>`
      SELECT DISTINCT e.id FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      CROSS JOIN LATERAL json_array_elements_text(j.payload -> 'emailIds') AS e(id)
      WHERE t.identifier = 'send-batch' AND e.id = ANY(${emails.map((e) => e.id)}::text[])`.execute(t.db.db);
    expect(jobs.length).toBe(emails.length);
    expect(contacts.size).toBeLessThanOrEqual(during.length + after.length);

    // The other project kept every event it was answered 200 for.
    const theirs = writes.filter((w) => w.kind === 'other');
    const { rows: [count] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE project_id = ${other.project.id}`.execute(t.db.db);
    expect(count?.n).toBe(theirs.length);
  }, 120_000);
});

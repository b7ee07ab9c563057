import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { CRONTAB } from '../../../src/jobs/index.js';
import { drainWorkflowEventQueue, sweepWorkflowEventQueue } from '../../../src/modules/workflows/index.js';
import { seedContacts } from '../campaigns/helpers.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, enrolmentPending, executionsOf, track, waitForExecutions, workflowJobs } from './engine-helpers.js';

/**
 * Coalesced enrolment (migration 0018, docs/workflows.md "Engine"): the events trigger queues the
 * matching events and keeps ONE keyed `workflow-events` job per project; the job drains the queue
 * in chunks, each chunk's DELETE committed with its enrolment.
 */
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => t?.close());

const project = async (): Promise<TestProject> => (await newProject(t.app)).project;
const key = (projectId: string) => `workflow-events:${projectId}`;
/** TRIGGER → DELAY 1 h: the step job after enrolment stays queued, so its batch can be read. */
const holdFlow = (eventName: string) => ({ eventName, steps: [{ key: 'hold', type: 'DELAY' as const, config: { amount: 1, unit: 'hours' } }], edges: [['trigger', 'hold']] as [string, string][] });

const insertEvents = async (projectId: string, contactIds: readonly string[], name: string) =>
  sql`INSERT INTO events (project_id, contact_id, name) SELECT ${projectId}::uuid, id, ${name} FROM unnest(${contactIds}::uuid[]) AS t(id)`.execute(t.db.db);

describe('coalesced enrolment', () => {
  it('events tracked in several requests share one job (its time kept), enrolled by one run into one step batch', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, holdFlow('joined'));
    await t.withWorkerStopped(async () => {
      for (let i = 0; i < 6; i++) {
        await track(t.app, p, { email: `c${i}@x.example`, event: 'joined' });
        const jobs = (await workflowJobs(t.db)).filter((j) => j.task === 'workflow-events' && j.key === key(p.id));
        expect(jobs).toHaveLength(1);
        expect(jobs[0]?.payload).toEqual({ projectId: p.id });
        if (i === 0) continue;
        // preserve_run_at: the first request's window (now + 200 ms) is kept, not pushed back.
        const first = await sql<{ run_at: Date; created_at: Date }>`SELECT run_at, created_at FROM graphile_worker._private_jobs WHERE key = ${key(p.id)}`.execute(t.db.db);
        expect(first.rows[0]?.run_at.getTime()).toBeLessThan((first.rows[0]?.created_at.getTime() ?? 0) + 1000);
      }
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 6, jobs: 1 });
    });
    await waitForExecutions(t.db, wf.id, 6, ['WAITING']);
    // One enrolment batch of 6, so one DELAY job carrying all 6 step executions (the job that
    // entered the delay is deleted by graphile-worker just after its commit: wait for that).
    const stepJobs = async () => (await workflowJobs(t.db)).filter((j) => j.task === 'workflow-step' && (j.payload as { projectId: string }).projectId === p.id);
    await until('only the delay job left', async () => (await stepJobs()).length === 1);
    expect((await stepJobs()).map((j) => (j.payload as { ids: string[] }).ids.length)).toEqual([6]);
    await until('the queue drained and its job done', async () => JSON.stringify(await enrolmentPending(t.db, p.id)) === JSON.stringify({ queued: 0, jobs: 0 }));
  });

  it('a drain failing after its first chunk loses nothing: that chunk committed, the rest still queued, the next run finishes', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'signed', steps: [], edges: [] });
    const contacts = await seedContacts(t.db, p.id, 25, { tag: 'q' });
    await t.withWorkerStopped(async () => {
      for (let i = 0; i < 25; i += 5) await insertEvents(p.id, contacts.slice(i, i + 5).map((c) => c.id), 'signed');
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 25, jobs: 1 });
      const failing = drainWorkflowEventQueue(t.db.db, p.id, {
        chunk: 10,
        beforeCommit: async (_trx, n) => {
          // Transient (a deadlock): the job fails for graphile-worker to retry.
          if (n === 2) throw Object.assign(new Error('injected deadlock in chunk 2'), { code: '40P01' });
        },
      });
      await expect(failing).rejects.toThrow('injected deadlock in chunk 2');
      expect(await executionsOf(t.db, wf.id)).toHaveLength(10);
      expect((await enrolmentPending(t.db, p.id)).queued).toBe(15);
      const rest = await drainWorkflowEventQueue(t.db.db, p.id, { chunk: 10 });
      expect(rest).toMatchObject({ enrolled: 15, chunks: 2, requeued: false });
    });
    const rows = await waitForExecutions(t.db, wf.id, 25, ['COMPLETED']);
    expect(new Set(rows.map((r) => r.contact_id)).size).toBe(25);
    await until('the queue drained and its job done', async () => JSON.stringify(await enrolmentPending(t.db, p.id)) === JSON.stringify({ queued: 0, jobs: 0 }));
  });

  it('an event whose enrolment fails permanently is isolated and dropped; every other event is enrolled', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'poison', steps: [], edges: [] });
    const contacts = await seedContacts(t.db, p.id, 20, { tag: 'poison' });
    let badContact = '';
    await t.withWorkerStopped(async () => {
      await insertEvents(p.id, contacts.map((c) => c.id), 'poison');
      const { rows } = await sql<{ id: string; contact_id: string }>`SELECT id, contact_id FROM events WHERE project_id = ${p.id} AND name = 'poison' ORDER BY id LIMIT 1 OFFSET 6`.execute(t.db.db);
      const bad = rows[0]?.id as string;
      badContact = rows[0]?.contact_id as string;
      let failures = 0;
      const r = await drainWorkflowEventQueue(t.db.db, p.id, {
        chunk: 8,
        beforeCommit: async (_trx, _n, eventIds) => {
          if (eventIds.includes(bad)) {
            failures++;
            throw new Error('injected permanent failure');
          }
        },
      });
      expect(r.dropped).toEqual([{ eventId: bad, error: 'injected permanent failure' }]);
      expect(r.enrolled).toBe(19);
      // 8 → 4 → 2 → 1: the bad event is alone after three halvings.
      expect(failures).toBe(4);
      expect(await enrolmentPending(t.db, p.id)).toMatchObject({ queued: 0 });
    });
    const done = await waitForExecutions(t.db, wf.id, 19, ['COMPLETED']);
    expect(done.map((x) => x.contact_id)).not.toContain(badContact);
  });

  it('a drain stopping at its bound enqueues itself again; the new job finishes', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'bounded', steps: [], edges: [] });
    const contacts = await seedContacts(t.db, p.id, 12, { tag: 'b' });
    await t.withWorkerStopped(async () => {
      await insertEvents(p.id, contacts.map((c) => c.id), 'bounded');
      await sql`DELETE FROM graphile_worker._private_jobs WHERE key = ${key(p.id)}`.execute(t.db.db);
      const r = await drainWorkflowEventQueue(t.db.db, p.id, { chunk: 5, maxChunks: 1 });
      expect(r).toMatchObject({ enrolled: 5, chunks: 1, requeued: true });
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 7, jobs: 1 });
    });
    await waitForExecutions(t.db, wf.id, 12, ['COMPLETED']);
  });

  it('the sweep (cron, every minute) re-enqueues the job of a project whose queued events wait longer than a minute', async () => {
    expect(CRONTAB).toContain('* * * * * workflow-events-sweep ');
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'stranded', steps: [], edges: [] });
    const contacts = await seedContacts(t.db, p.id, 3, { tag: 's' });
    await t.withWorkerStopped(async () => {
      await insertEvents(p.id, contacts.map((c) => c.id), 'stranded');
      // The job lost (as in the race described in the docs): the rows stay queued.
      await sql`DELETE FROM graphile_worker._private_jobs WHERE key = ${key(p.id)}`.execute(t.db.db);
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 3, jobs: 0 });
      await sweepWorkflowEventQueue(t.db.db);
      expect((await enrolmentPending(t.db, p.id)).jobs).toBe(0); // younger than a minute: left alone
      await sql`UPDATE workflow_event_queue SET created_at = now() - interval '2 minutes' WHERE project_id = ${p.id}::uuid`.execute(t.db.db);
      expect(await sweepWorkflowEventQueue(t.db.db)).toBeGreaterThanOrEqual(1);
      const jobs = (await workflowJobs(t.db)).filter((j) => j.key === key(p.id));
      expect(jobs.map((j) => [j.task, j.payload])).toEqual([['workflow-events', { projectId: p.id }]]);
    });
    await waitForExecutions(t.db, wf.id, 3, ['COMPLETED']);
    await until('the queue drained and its job done', async () => JSON.stringify(await enrolmentPending(t.db, p.id)) === JSON.stringify({ queued: 0, jobs: 0 }));
  });

  it('an event while the job runs: graphile-worker clears the running job’s key (no retry) and adds a new job, which drains it', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'during', steps: [], edges: [] });
    const contacts = await seedContacts(t.db, p.id, 2, { tag: 'd' });
    await t.withWorkerStopped(async () => {
      await insertEvents(p.id, [contacts[0]?.id ?? ''], 'during');
      // As a worker does when it takes the job.
      await sql`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'test', attempts = 1 WHERE key = ${key(p.id)}`.execute(t.db.db);
      await insertEvents(p.id, [contacts[1]?.id ?? ''], 'during');
      const jobs = (await workflowJobs(t.db)).filter((j) => j.task === 'workflow-events' && (j.payload as { projectId?: string }).projectId === p.id);
      const running = jobs.find((j) => j.locked_at !== null);
      const next = jobs.find((j) => j.locked_at === null);
      expect(running).toMatchObject({ key: null, attempts: 25 });
      expect(next).toMatchObject({ key: key(p.id), attempts: 0 });
      // The running job "crashes" before committing anything: its rows are still queued.
      await sql`DELETE FROM graphile_worker._private_jobs WHERE id = ${running?.id ?? '0'}::bigint`.execute(t.db.db);
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 2, jobs: 1 });
    });
    await waitForExecutions(t.db, wf.id, 2, ['COMPLETED']);
  });

  it('a job of the old protocol ({eventIds}, queued before migration 0018) still enrols', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'legacy', steps: [], edges: [] });
    const contacts = await seedContacts(t.db, p.id, 3, { tag: 'l' });
    await t.withWorkerStopped(async () => {
      await sql`ALTER TABLE events DISABLE TRIGGER events_workflow_enrolment`.execute(t.db.db);
      try {
        await insertEvents(p.id, contacts.map((c) => c.id), 'legacy');
      } finally {
        await sql`ALTER TABLE events ENABLE TRIGGER events_workflow_enrolment`.execute(t.db.db);
      }
      await sql`
        SELECT graphile_worker.add_job('workflow-events', json_build_object('eventIds', array_agg(id)), priority => 5, max_attempts => 25)
        FROM events WHERE project_id = ${p.id}::uuid AND name = 'legacy'`.execute(t.db.db);
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 0, jobs: 0 });
    });
    const rows = await waitForExecutions(t.db, wf.id, 3, ['COMPLETED']);
    expect(new Set(rows.map((r) => r.contact_id))).toEqual(new Set(contacts.map((c) => c.id)));
  });
});

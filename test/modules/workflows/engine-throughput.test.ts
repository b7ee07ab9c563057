import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Database } from '../../../src/db/schema.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowStepType } from '../../../src/db/schema.js';
import { handleWorkflowEvents, runWorkflowStepBatch } from '../../../src/modules/workflows/index.js';
import { newProject } from '../../helpers/accounts.js';
import { addVerifiedDomain, createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow } from './engine-helpers.js';

/**
 * The benchmark's graph (TRIGGER → CONDITION → SEND_EMAIL → DELAY → UPDATE_CONTACT) driven by hand
 * with no worker running: enrolment, then each queued workflow-step job run in turn, timed per
 * step type (docs/workflows.md "Throughput"). Checks what the benchmark checks: every execution
 * COMPLETED or completed at the `no` branch, one email (and one send-email job) per `pro` contact.
 * WORKFLOW_PROFILE_N sets the size (default 500, one job per step); the timings are printed, and
 * with WORKFLOW_PROFILE_SQL=1 the time of each statement (summed by its first words).
 */
const N = Number(process.env.WORKFLOW_PROFILE_N ?? 500);

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(() => t?.close());

async function takeStepJobs(): Promise<{ projectId: string; ids: string[] }[]> {
  const { rows } = await sql<{ payload: { projectId: string; ids: string[] } }>`
    DELETE FROM graphile_worker._private_jobs j USING graphile_worker._private_tasks k
    WHERE k.id = j.task_id AND k.identifier = 'workflow-step'
    RETURNING j.payload`.execute(t.db.db);
  return rows.map((r) => r.payload);
}

describe('workflow engine throughput (profile)', () => {
  it(`runs ${N} executions through CONDITION → SEND_EMAIL → DELAY → UPDATE_CONTACT, one email each`, async () => {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    const template = await t.db.db
      .insertInto('templates')
      .values({ project_id: project.id, name: 'Welcome', subject: 'Hi {{firstName}}', body: '<p>Hello {{firstName}}, plan {{event.plan}}</p>', from_email: `hello@${domain}`, from_name: 'Shop', type: 'TRANSACTIONAL' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const wf = await createWorkflow(t.db, project.id, {
      eventName: 'signup',
      steps: [
        { key: 'check', type: 'CONDITION', config: { field: 'data.plan', operator: 'equals', value: 'pro' } },
        { key: 'mail', type: 'SEND_EMAIL', config: { templateId: template.id }, templateId: template.id },
        { key: 'wait', type: 'DELAY', config: { amount: 1, unit: 'minutes' } },
        { key: 'tag', type: 'UPDATE_CONTACT', config: { updates: { onboarded: true } } },
      ],
      edges: [['trigger', 'check'], ['check', 'mail', 'yes'], ['mail', 'wait'], ['wait', 'tag']],
    });
    const { rows: contacts } = await sql<{ id: string }>`
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ${project.id}::uuid, 'member' || i || '@rcpt.example', true,
             jsonb_build_object('firstName', 'M' || i, 'plan', CASE WHEN i % 10 = 0 THEN 'free' ELSE 'pro' END)
      FROM generate_series(1, ${N}::int) i RETURNING id`.execute(t.db.db);
    const { rows: events } = await sql<{ id: string }>`
      INSERT INTO events (project_id, contact_id, name, data)
      SELECT ${project.id}::uuid, c.id, 'signup', jsonb_build_object('plan', c.data->>'plan')
      FROM contacts c WHERE c.id = ANY(${contacts.map((c) => c.id)}::uuid[]) RETURNING id`.execute(t.db.db);
    await sql`ANALYZE`.execute(t.db.db);

    const statements = new Map<string, { n: number; ms: number }>();
    const db = process.env.WORKFLOW_PROFILE_SQL === '1'
      ? new Kysely<Database>({
          dialect: new PostgresDialect({ pool: t.db.pool }),
          log: (e) => {
            const key = e.query.sql.replace(/\s+/g, ' ').trim().slice(0, 110);
            const entry = statements.get(key) ?? { n: 0, ms: 0 };
            statements.set(key, { n: entry.n + 1, ms: entry.ms + e.queryDurationMillis });
          },
        })
      : t.db.db;
    const deps = { ...t.deps, db };
    const times = new Map<string, number[]>();
    const time = async (phase: string, fn: () => Promise<unknown>) => {
      const start = performance.now();
      await fn();
      times.set(phase, [...(times.get(phase) ?? []), performance.now() - start]);
    };
    await time('enrol', () => handleWorkflowEvents(db, events.map((e) => e.id)));
    for (let round = 0; round < 10; round++) {
      const jobs = await takeStepJobs();
      if (jobs.length === 0) break;
      // The DELAY's jobs wait a minute: make their steps due now.
      await sql`UPDATE workflow_step_executions SET due_at = now() - interval '1 second' WHERE workflow_id = ${wf.id}::uuid AND status = 'WAITING'`.execute(t.db.db);
      for (const job of jobs) {
        const { rows: types } = await sql<{ type: WorkflowStepType; status: string }>`
          SELECT s.type, se.status FROM workflow_step_executions se JOIN workflow_steps s ON s.id = se.step_id WHERE se.id = ${job.ids[0] ?? ''}::uuid`.execute(t.db.db);
        const phase = `${types[0]?.type ?? '?'} ${types[0]?.status ?? ''}`;
        await time(phase, () => runWorkflowStepBatch(deps, job.projectId, job.ids));
      }
    }
    const summary = [...times].map(([phase, ms]) => `${phase}: ${ms.length} job(s), ${Math.round(ms.reduce((a, b) => a + b, 0))} ms`);
    for (const [key, v] of [...statements].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)) console.log(`${Math.round(v.ms)} ms ${v.n}× ${key}`);
    const total = [...times.values()].flat().reduce((a, b) => a + b, 0);
    const { rows: counted } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_step_executions WHERE workflow_id = ${wf.id}::uuid AND status = 'COMPLETED'`.execute(t.db.db);
    const steps = counted[0]?.n ?? 0;
    console.log(`[throughput] ${N} executions, ${steps} steps in ${Math.round(total)} ms = ${Math.round((steps / total) * 1000)} steps/s\n  ${summary.join('\n  ')}`);

    const { rows: statuses } = await sql<{ status: string; n: number }>`
      SELECT status, count(*)::int AS n FROM workflow_executions WHERE workflow_id = ${wf.id}::uuid GROUP BY status`.execute(t.db.db);
    expect(statuses).toEqual([{ status: 'COMPLETED', n: N }]);
    const pro = N - Math.floor(N / 10);
    const { rows: mails } = await sql<{ n: number; distinct_contacts: number; jobs: number }>`
      SELECT count(*)::int AS n, count(DISTINCT contact_id)::int AS distinct_contacts,
        (SELECT count(*)::int FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks k ON k.id = j.task_id AND k.identifier = 'send-email') AS jobs
      FROM emails WHERE workflow_step_id = ${wf.steps.mail ?? ''}::uuid AND status = 'PENDING'`.execute(t.db.db);
    expect(mails[0]).toEqual({ n: pro, distinct_contacts: pro, jobs: pro });
    const { rows: onboarded } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM contacts WHERE project_id = ${project.id}::uuid AND data->>'onboarded' = 'true'`.execute(t.db.db);
    expect(onboarded[0]?.n).toBe(pro);
    // TRIGGER + CONDITION for everyone, SEND_EMAIL + DELAY + UPDATE_CONTACT for `pro`.
    expect(steps).toBe(2 * N + 3 * pro);
  }, 600_000);

  it('CONDITION on event.<key> and context.<key> decides per execution inside ONE batch (one job, one query)', async () => {
    const { project } = await newProject(t.app);
    const wf = await createWorkflow(t.db, project.id, {
      eventName: 'ordered',
      steps: [
        {
          key: 'big',
          type: 'CONDITION',
          config: { condition: { logic: 'OR', groups: [{ logic: 'AND', filters: [{ field: 'event.total', operator: 'greaterThan', value: 100 }] }, { logic: 'AND', filters: [{ field: 'context.vip', operator: 'equals', value: true }] }] } },
        },
        { key: 'tag', type: 'UPDATE_CONTACT', config: { updates: { big: true } } },
      ],
      edges: [['trigger', 'big'], ['big', 'tag', 'yes']],
    });
    const { rows: events } = await sql<{ id: string }>`
      WITH c AS (
        INSERT INTO contacts (project_id, email, subscribed, data)
        SELECT ${project.id}::uuid, 'o' || i || '@rcpt.example', true, jsonb_build_object('i', i) FROM generate_series(1, 20) i RETURNING id, data)
      INSERT INTO events (project_id, contact_id, name, data)
      SELECT ${project.id}::uuid, c.id, 'ordered', jsonb_build_object('total', (c.data->>'i')::int * 10) FROM c RETURNING id`.execute(t.db.db);
    await handleWorkflowEvents(t.db.db, events.map((e) => e.id));
    // Execution 3 (total 30) has context.vip: yes by the second group.
    await sql`UPDATE workflow_executions x SET context = '{"vip": true}' FROM events e
      WHERE e.id = x.trigger_event_id AND x.workflow_id = ${wf.id}::uuid AND e.data->>'total' = '30'`.execute(t.db.db);
    const jobs = await takeStepJobs();
    expect(jobs.map((j) => j.ids.length)).toEqual([20]);
    for (const job of jobs) await runWorkflowStepBatch(t.deps, job.projectId, job.ids);
    const { rows } = await sql<{ total: number; branch: string }>`
      SELECT (x.event->>'total')::int AS total, se.branch FROM workflow_step_executions se
      JOIN workflow_executions x ON x.id = se.execution_id
      WHERE se.step_id = ${wf.steps.big ?? ''}::uuid ORDER BY 1`.execute(t.db.db);
    expect(rows.map((r) => [r.total, r.branch])).toEqual(Array.from({ length: 20 }, (_, i) => [(i + 1) * 10, (i + 1) * 10 > 100 || i === 2 ? 'yes' : 'no']));
  });
});

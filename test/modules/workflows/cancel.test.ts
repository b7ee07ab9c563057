import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProjectById } from '../../../src/modules/projects/index.js';
import { CANCEL_CHUNK } from '../../../src/modules/workflows/engine/cancel.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { runCli } from '../../helpers/cli.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, track, waitForExecutions } from './engine-helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => t?.close());

const project = async (): Promise<TestProject> => (await newProject(t.app)).project;
const dayLong = { eventName: 'go', steps: [{ key: 'hold', type: 'DELAY' as const, config: { amount: 1, unit: 'days' } }], edges: [['trigger', 'hold']] as [string, string][] };

/** `n` WAITING executions of one workflow, written as rows (contacts too): what cancel-all meets at scale. */
async function seedWaiting(projectId: string, workflowId: string, holdStepId: string, n: number): Promise<void> {
  await sql`
    WITH c AS (
      INSERT INTO contacts (project_id, email, subscribed) SELECT ${projectId}::uuid, 'seed' || i || '@x.example', true FROM generate_series(1, ${n}::int) i RETURNING id
    ), x AS (
      INSERT INTO workflow_executions (project_id, workflow_id, contact_id, status, current_step_id)
      SELECT ${projectId}::uuid, ${workflowId}::uuid, c.id, 'WAITING', ${holdStepId}::uuid FROM c RETURNING id
    )
    INSERT INTO workflow_step_executions (project_id, execution_id, workflow_id, step_id, status, due_at)
    SELECT ${projectId}::uuid, x.id, ${workflowId}::uuid, ${holdStepId}::uuid, 'WAITING', now() + interval '1 day' FROM x`.execute(t.db.db);
}

const statusCounts = async (workflowId: string) => {
  const { rows } = await sql<{ status: string; n: number }>`
    SELECT status, count(*)::int AS n FROM workflow_executions WHERE workflow_id = ${workflowId}::uuid GROUP BY status`.execute(t.db.db);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
};

describe('cancelling many executions', () => {
  it('cancel-all cancels every active execution in chunks and answers the count; their steps become SKIPPED', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, dayLong);
    const n = CANCEL_CHUNK * 2 + 7;
    await seedWaiting(p.id, wf.id, wf.steps.hold ?? '', n);
    const res = await t.app.inject({ method: 'POST', url: `/workflows/${wf.id}/executions/cancel-all`, headers: bearer(p.secret) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ cancelled: n });
    expect(await statusCounts(wf.id)).toEqual({ CANCELLED: n });
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM workflow_step_executions WHERE workflow_id = ${wf.id}::uuid AND status = 'SKIPPED'`.execute(t.db.db);
    expect(rows[0]?.n).toBe(n);
  });
});

describe('a disabled project cancels its executions', () => {
  it('disabling (operator CLI) cancels a day-long DELAY at once, not when its step job comes due; other projects untouched', async () => {
    const p = await project();
    const other = await project();
    const wf = await createWorkflow(t.db, p.id, dayLong);
    const otherWf = await createWorkflow(t.db, other.id, dayLong);
    await track(t.app, p, { email: 'held@x.example', event: 'go' });
    await track(t.app, other, { email: 'held@x.example', event: 'go' });
    await waitForExecutions(t.db, wf.id, 1, ['WAITING']);
    await waitForExecutions(t.db, otherWf.id, 1, ['WAITING']);

    const dataDir = mkdtempSync(path.join(tmpdir(), 'mailplatform-cli-'));
    try {
      const off = await runCli(['disable-project', '--project', p.id], { dataDir, env: { DATABASE_URL: t.config.databaseUrl } });
      expect(off.code, off.stderr).toBe(0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect(await findProjectById(t.db.db, p.id)).toMatchObject({ disabled: true });
    const [row] = await waitForExecutions(t.db, wf.id, 1, ['CANCELLED']);
    expect(row?.error).toBe('Project disabled');
    expect(await statusCounts(otherWf.id)).toEqual({ WAITING: 1 });
  });

  it('a project re-enabled before the job runs keeps its executions', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, dayLong);
    await track(t.app, p, { email: 'kept@x.example', event: 'go' });
    await waitForExecutions(t.db, wf.id, 1, ['WAITING']);
    await sql`UPDATE projects SET disabled = false WHERE id = ${p.id}::uuid`.execute(t.db.db);
    const { cancelDisabledProjectExecutions } = await import('../../../src/modules/workflows/index.js');
    expect(await cancelDisabledProjectExecutions(t.db.db, p.id)).toBe(0);
    expect(await statusCounts(wf.id)).toEqual({ WAITING: 1 });
  });
});

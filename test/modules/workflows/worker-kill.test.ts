import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { cleanupServers } from '../../helpers/process.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { seedContacts } from '../campaigns/helpers.js';
import { killHard, releaseKilledWorker, startReadyWorker } from '../campaigns/worker-process.js';
import { createSendTestApp, newSender, type SendTestApp, waitForStatus } from '../emails/helpers.js';
import { createWorkflow, waitForExecutions } from './engine-helpers.js';

/**
 * Real `ROLE=worker` processes SIGKILLed in the middle of a workflow run (docs/workflows.md
 * "Engine"): once during the SEND_EMAIL steps, once while the executions wait on DELAY jobs.
 * Afterwards every execution has each step exactly once, one email, and its contact updated:
 * nothing lost, nothing doubled. The API runs in-process and never runs jobs.
 */
const N = 300;

let sink: SmtpSink;
let t: SendTestApp;
beforeAll(async () => {
  sink = await startSmtpSink({ keepRaw: false });
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
});
afterEach(() => cleanupServers());
afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await t?.close();
  await sink?.close();
});

const countSteps = async (workflowId: string, key: string, status: string) => {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM workflow_step_executions se JOIN workflow_steps s ON s.id = se.step_id
    WHERE se.workflow_id = ${workflowId}::uuid AND s.name = ${key} AND se.status = ${status}`.execute(t.db.db);
  return rows[0]?.n ?? 0;
};

describe('workflow worker killed', () => {
  it('SIGKILL during SEND_EMAIL and during DELAY: no step lost, none run twice, one email each', async () => {
    const s = await newSender(t);
    const tpl = await t.app.inject({
      method: 'POST',
      url: '/templates',
      headers: bearer(s.project.secret),
      payload: { name: 'Hi', subject: 'Hi {{firstName}}', body: '<p>Hello {{firstName}}</p>', from: s.from, type: 'TRANSACTIONAL' },
    });
    expect(tpl.statusCode, tpl.body).toBe(201);
    const templateId = tpl.json<{ id: string }>().id;
    const wf = await createWorkflow(t.db, s.project.id, {
      eventName: 'joined',
      steps: [
        { key: 'check', type: 'CONDITION', config: { field: 'email', operator: 'contains', value: '@' } },
        { key: 'mail', type: 'SEND_EMAIL', config: { templateId }, templateId },
        { key: 'wait', type: 'DELAY', config: { amount: 0.1, unit: 'minutes' } },
        { key: 'mark', type: 'UPDATE_CONTACT', config: { updates: { done: true } } },
      ],
      edges: [['trigger', 'check'], ['check', 'mail', 'yes'], ['mail', 'wait'], ['wait', 'mark']],
    });
    const contacts = await seedContacts(t.db, s.project.id, N, { tag: 'wk' });
    // 30 statements of 10 events, queued for the project's one workflow-events job (migration 0018),
    // which is told to drain them 10 per transaction: 30 enrolment commits, many small step batches.
    for (let i = 0; i < N; i += 10) {
      await sql`INSERT INTO events (project_id, contact_id, name) SELECT ${s.project.id}::uuid, id, 'joined' FROM unnest(${contacts.slice(i, i + 10).map((c) => c.id)}::uuid[]) AS t(id)`.execute(t.db.db);
    }
    const chunked = await sql`
      UPDATE graphile_worker._private_jobs SET payload = (payload::jsonb || '{"chunk": 10}')::json
      WHERE key = ${`workflow-events:${s.project.id}`}`.execute(t.db.db);
    expect(Number(chunked.numAffectedRows)).toBe(1);

    const first = await startReadyWorker(t, sink.url);
    await until('some SEND_EMAIL steps done', async () => (await countSteps(wf.id, 'mail', 'COMPLETED')) >= 1, { timeoutMs: 30_000, intervalMs: 5 });
    await killHard(first);
    const mailedAtKill = await countSteps(wf.id, 'mail', 'COMPLETED');
    await releaseKilledWorker(t, first);

    const second = await startReadyWorker(t, sink.url);
    await until('most executions waiting on their DELAY', async () => (await countSteps(wf.id, 'wait', 'WAITING')) >= N / 2, { timeoutMs: 30_000, intervalMs: 10 });
    await killHard(second);
    await releaseKilledWorker(t, second);

    await startReadyWorker(t, sink.url);
    await waitForExecutions(t.db, wf.id, N, ['COMPLETED'], 60_000);

    const { rows: perExecution } = await sql<{ steps: string; emails: number }>`
      SELECT string_agg(s.name || ':' || se.status, ',' ORDER BY se.created_at, se.id) AS steps,
             (SELECT count(*)::int FROM emails e WHERE e.workflow_execution_id = x.id) AS emails
      FROM workflow_executions x JOIN workflow_step_executions se ON se.execution_id = x.id JOIN workflow_steps s ON s.id = se.step_id
      WHERE x.workflow_id = ${wf.id}::uuid GROUP BY x.id`.execute(t.db.db);
    expect(perExecution).toHaveLength(N);
    const expected = 'trigger:COMPLETED,check:COMPLETED,mail:COMPLETED,wait:COMPLETED,mark:COMPLETED';
    expect(perExecution.filter((r) => r.steps !== expected || r.emails !== 1)).toEqual([]);
    const done = await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', s.project.id).where(sql<boolean>`data->>'done' = 'true'`).execute();
    expect(done).toHaveLength(N);
    const emails = await t.db.db.selectFrom('emails').select('id').where('project_id', '=', s.project.id).execute();
    expect(emails).toHaveLength(N);
    await waitForStatus(t.db, emails.map((e) => e.id), ['SENT'], 60_000);
    const perAddress = new Map<string, number>();
    for (const m of sink.messages) for (const to of m.to) perAddress.set(to, (perAddress.get(to) ?? 0) + 1);
    expect([...perAddress.values()].filter((n) => n > 1)).toEqual([]);
    expect(mailedAtKill).toBeLessThan(N); // the first kill landed before the mail steps were all done
  }, 180_000);
});

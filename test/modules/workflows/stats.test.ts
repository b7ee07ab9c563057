import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { workflowClient } from './definitions-helpers.js';

let t: TestApp;
let w: ReturnType<typeof workflowClient>;
beforeAll(async () => {
  t = await createTestApp();
  w = workflowClient(t);
});
afterAll(() => t.close());

type StepStatus = 'PENDING' | 'WAITING' | 'RUNNING' | 'COMPLETED' | 'SKIPPED' | 'FAILED';

/** One execution per status list entry, each with a step execution at `stepId` in that status. */
async function visits(p: TestProject, wfId: string, stepId: string, statuses: StepStatus[]): Promise<string[]> {
  const ids: string[] = [];
  for (const status of statuses) {
    const c = await t.db.db
      .insertInto('contacts')
      .values({ project_id: p.id, email: `${Math.random().toString(36).slice(2)}@example.com`, subscribed: true })
      .returning('id')
      .executeTakeFirstOrThrow();
    const ex = await t.db.db.insertInto('workflow_executions').values({ project_id: p.id, workflow_id: wfId, contact_id: c.id, status: 'COMPLETED' }).returning('id').executeTakeFirstOrThrow();
    await t.db.db.insertInto('workflow_step_executions').values({ project_id: p.id, execution_id: ex.id, workflow_id: wfId, step_id: stepId, status }).execute();
    ids.push(ex.id);
  }
  return ids;
}

describe('GET /workflows/:id per-step stats', () => {
  it('counts visits by status (completed = COMPLETED + SKIPPED; waiting = PENDING + WAITING + RUNNING) and SEND_EMAIL milestones', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const templateId = await w.template(p, 'Hello');
    const send = await w.addStep(p, wf.id, { type: 'SEND_EMAIL', name: 'Mail', config: { templateId } });
    const delay = await w.addStep(p, wf.id, w.delay);
    const executions = await visits(p, wf.id, send.id, ['COMPLETED', 'COMPLETED', 'COMPLETED', 'SKIPPED', 'FAILED', 'RUNNING']);
    await visits(p, wf.id, delay.id, ['PENDING', 'WAITING', 'WAITING']);
    // Another workflow's step visits and emails never count here.
    const other = await w.create(p);
    const otherStep = await w.addStep(p, other.id, { type: 'SEND_EMAIL', config: { templateId } });
    await visits(p, other.id, otherStep.id, ['COMPLETED']);

    const now = new Date();
    const email = (executionId: string, stepId: string, milestones: Partial<Record<'sent_at' | 'delivered_at' | 'opened_at' | 'clicked_at' | 'bounced_at', Date>>) => ({
      project_id: p.id,
      source: 'WORKFLOW' as const,
      type: 'MARKETING' as const,
      to_email: 'x@example.com',
      from_email: 'hello@example.com',
      subject: 's',
      html: 'h',
      message_id: `<${Math.random()}@example.com>`,
      status: 'SENT' as const,
      workflow_execution_id: executionId,
      workflow_step_id: stepId,
      template_id: templateId,
      ...milestones,
    });
    await t.db.db
      .insertInto('emails')
      .values([
        email(executions[0] ?? '', send.id, { sent_at: now, delivered_at: now, opened_at: now, clicked_at: now }),
        email(executions[1] ?? '', send.id, { sent_at: now, delivered_at: now, opened_at: now }),
        email(executions[2] ?? '', send.id, { sent_at: now, bounced_at: now }),
        email(executions[3] ?? '', otherStep.id, { sent_at: now, delivered_at: now }),
      ])
      .execute();

    const detail = await w.detail(p, wf.id);
    const byId = new Map(detail.steps.map((s) => [s.id, s]));
    expect(byId.get(send.id)?.stats).toEqual({ entered: 6, completed: 4, waiting: 1, failed: 1, sent: 3, delivered: 2, opened: 2, clicked: 1, bounced: 1 });
    expect(byId.get(send.id)?.template).toEqual({ id: templateId, name: 'Hello', subject: 'Hi {{name}}', type: 'MARKETING' });
    expect(byId.get(delay.id)?.stats).toEqual({ entered: 3, completed: 0, waiting: 3, failed: 0 });
    const trig = detail.steps.find((s) => s.type === 'TRIGGER');
    expect(trig?.stats).toEqual({ entered: 0, completed: 0, waiting: 0, failed: 0 });
    expect(trig).not.toHaveProperty('template');
  });
  it('a SEND_EMAIL step without emails reports zero milestones', async () => {
    const p = await w.fresh();
    const wf = await w.create(p);
    const send = await w.addStep(p, wf.id, { type: 'SEND_EMAIL', config: { templateId: await w.template(p) } });
    const step = (await w.detail(p, wf.id)).steps.find((s) => s.id === send.id);
    expect(step?.stats).toEqual({ entered: 0, completed: 0, waiting: 0, failed: 0, sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 });
  });
});

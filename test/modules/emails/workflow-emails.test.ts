import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobPriority } from '../../../src/jobs/queue.js';
import {
  countWorkflowStepEmails,
  queueTemplateEmail,
  queueTemplateEmails,
  TEMPLATE_EMPTY,
  UNSUBSCRIBED_MARKETING,
  type WorkflowEmailInput,
  type WorkflowEmailItem,
} from '../../../src/modules/emails/index.js';
import { addSuppressions } from '../../../src/modules/suppressions/index.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { addVerifiedDomain, createSendTestApp, jobsOf, type SendTestApp } from './helpers.js';

/**
 * The workflows' sender (queueTemplateEmail) and their per-step stats, on a database of this
 * file with no worker running: rows and jobs are checked as written.
 */
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(() => t?.close());

interface Setup {
  project: TestProject;
  from: string;
  contact: WorkflowEmailInput['contact'];
}

async function setup(opts: { subscribed?: boolean } = {}): Promise<Setup> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  const email = `ada-${randomUUID().slice(0, 8)}@rcpt.example`;
  const contact = await t.db.db
    .insertInto('contacts')
    .values({ project_id: project.id, email, subscribed: opts.subscribed ?? true, data: JSON.stringify({ firstName: 'Ada', plan: 'pro' }) })
    .returning(['id', 'email', 'data', 'subscribed'])
    .executeTakeFirstOrThrow();
  return { project, from: `hello@${domain}`, contact };
}

async function template(s: Setup, values: { subject: string; body: string; type?: 'MARKETING' | 'TRANSACTIONAL' }): Promise<string> {
  const row = await t.db.db
    .insertInto('templates')
    .values({ project_id: s.project.id, name: 'W', subject: values.subject, body: values.body, from_email: s.from, from_name: 'Shop', type: values.type ?? 'TRANSACTIONAL' })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

const links = () => ({ tokens: t.deps.tokens, publicUrl: t.config.publicUrl });

function queue(s: Setup, templateId: string, extra: Partial<WorkflowEmailInput> = {}) {
  return t.db.db.transaction().execute((trx) =>
    queueTemplateEmail(trx, {
      projectId: s.project.id,
      templateId,
      contact: s.contact,
      variables: {},
      workflow: { executionId: randomUUID(), stepId: randomUUID() },
      links: links(),
      ...extra,
    }),
  );
}

const emailRow = (id: string) => t.db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('queueTemplateEmail', () => {
  it('renders the template for the contact (variables over data, dotted paths, subscription links) and queues it at workflow priority', async () => {
    const s = await setup();
    const id = await template(s, {
      subject: 'Order {{event.orderId}} for {{firstName}}',
      body: '<p>{{plan}} {{event.order.total}} {{context.step}} <a href="{{unsubscribeUrl}}">u</a> {{email}}</p>',
    });
    const workflow = { executionId: randomUUID(), stepId: randomUUID() };
    const result = await queue(s, id, { variables: { plan: 'gold', event: { orderId: 42, order: { total: '9.99' } }, context: { step: 'two' } }, workflow });
    expect(result).toEqual({ emailId: expect.any(String), outcome: 'queued' });
    const row = await emailRow(result.emailId ?? '');
    expect(row).toMatchObject({
      source: 'WORKFLOW',
      status: 'PENDING',
      type: 'TRANSACTIONAL',
      template_id: id,
      contact_id: s.contact.id,
      to_email: s.contact.email,
      from_email: s.from,
      from_name: 'Shop',
      subject: 'Order 42 for Ada',
      workflow_execution_id: workflow.executionId,
      workflow_step_id: workflow.stepId,
      message_id: `<${row.id}@${s.from.split('@')[1]}>`,
    });
    expect(row.html).toContain('<p>gold 9.99 two <a href="http://');
    expect(row.html).toContain(`/unsubscribe/`);
    expect(row.html).toContain(s.contact.email);
    const jobs = await jobsOf(t.db, [row.id]);
    expect(jobs).toEqual([expect.objectContaining({ task: 'send-email', priority: JobPriority.workflow, key: row.id })]);
  });

  it('writes one email per execution and step: a second call is a duplicate and writes nothing', async () => {
    const s = await setup();
    const id = await template(s, { subject: 'Hi', body: '<p>Hi</p>' });
    const workflow = { executionId: randomUUID(), stepId: randomUUID() };
    const first = await queue(s, id, { workflow });
    const second = await queue(s, id, { workflow });
    expect(first.outcome).toBe('queued');
    expect(second).toEqual({ emailId: null, outcome: 'duplicate' });
    const rows = await t.db.db.selectFrom('emails').select('id').where('workflow_execution_id', '=', workflow.executionId).execute();
    expect(rows).toHaveLength(1);
  });

  it('cancels MARKETING mail to an unsubscribed contact (row with the reason, no job); TRANSACTIONAL mail is queued regardless', async () => {
    const s = await setup({ subscribed: false });
    const marketing = await queue(s, await template(s, { subject: 'Sale', body: '<p>Sale</p>', type: 'MARKETING' }));
    expect(marketing).toEqual({ emailId: expect.any(String), outcome: 'cancelled', reason: UNSUBSCRIBED_MARKETING });
    expect(await emailRow(marketing.emailId ?? '')).toMatchObject({ status: 'CANCELLED', error: UNSUBSCRIBED_MARKETING });
    expect(await jobsOf(t.db, [marketing.emailId ?? ''])).toEqual([]);
    const receipt = await queue(s, await template(s, { subject: 'Receipt', body: '<p>Thanks</p>' }));
    expect(receipt.outcome).toBe('queued');
  });

  it('cancels mail to a suppressed address, and a template without subject', async () => {
    const s = await setup();
    const empty = await queue(s, await template(s, { subject: '', body: '<p>x</p>' }));
    expect(empty).toMatchObject({ outcome: 'cancelled', reason: TEMPLATE_EMPTY });
    await addSuppressions(t.db.db, [{ projectId: s.project.id, email: s.contact.email, reason: 'MANUAL', detail: null, sourceEmailId: null }]);
    const suppressed = await queue(s, await template(s, { subject: 'Hi', body: '<p>Hi</p>' }));
    expect(suppressed.outcome).toBe('cancelled');
    expect(suppressed.reason).toMatch(/^Not sent: the address is suppressed/);
    expect(await jobsOf(t.db, [suppressed.emailId ?? ''])).toEqual([]);
  });

  it('refuses an unknown template (404) and writes nothing', async () => {
    const s = await setup();
    const workflow = { executionId: randomUUID(), stepId: randomUUID() };
    await expect(queue(s, randomUUID(), { workflow })).rejects.toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
    const rows = await t.db.db.selectFrom('emails').select('id').where('workflow_execution_id', '=', workflow.executionId).execute();
    expect(rows).toEqual([]);
  });
});

describe('queueTemplateEmails (a batch of one step)', () => {
  async function contact(s: Setup, localPart: string, subscribed = true): Promise<WorkflowEmailItem['contact']> {
    return t.db.db
      .insertInto('contacts')
      .values({ project_id: s.project.id, email: `${localPart}-${randomUUID().slice(0, 8)}@rcpt.example`, subscribed, data: JSON.stringify({ firstName: localPart }) })
      .returning(['id', 'email', 'data', 'subscribed'])
      .executeTakeFirstOrThrow();
  }
  const batch = (s: Setup, templateId: string, items: WorkflowEmailItem[]) =>
    t.db.db.transaction().execute((trx) => queueTemplateEmails(trx, { projectId: s.project.id, templateId, links: links(), items }));
  const item = (c: WorkflowEmailItem['contact'], stepId: string, executionId = randomUUID()): WorkflowEmailItem => ({
    contact: c,
    variables: { event: { n: c.data?.firstName } },
    workflow: { executionId, stepId },
  });

  it('answers per item in input order: queued, suppressed and unsubscribed (CANCELLED, no job) mixed, each rendered for its contact', async () => {
    const s = await setup();
    const id = await template(s, { subject: 'Hi {{firstName}}', body: '<p>{{event.n}}</p>', type: 'MARKETING' });
    const [a, suppressedContact, b, unsubscribed, c] = [
      await contact(s, 'a'),
      await contact(s, 'sup'),
      await contact(s, 'b'),
      await contact(s, 'unsub', false),
      await contact(s, 'c'),
    ];
    // Suppressed under another spelling of the address: the check is on the normalised address.
    await addSuppressions(t.db.db, [{ projectId: s.project.id, email: suppressedContact.email, reason: 'MANUAL', detail: null, sourceEmailId: null }]);
    const stepId = randomUUID();
    const items = [a, { ...suppressedContact, email: suppressedContact.email.toUpperCase() }, b, unsubscribed, c].map((x) => item(x, stepId));
    const results = await batch(s, id, items);
    expect(results.map((r) => r.outcome)).toEqual(['queued', 'cancelled', 'queued', 'cancelled', 'queued']);
    expect(results[1]?.reason).toMatch(/^Not sent: the address is suppressed/);
    expect(results[3]).toEqual({ emailId: expect.any(String), outcome: 'cancelled', reason: UNSUBSCRIBED_MARKETING });
    const rows = await Promise.all(results.map((r) => emailRow(r.emailId ?? '')));
    expect(rows.map((r) => [r.workflow_execution_id, r.contact_id, r.subject, r.html, r.status])).toEqual(
      items.map((it, n) => [it.workflow.executionId, it.contact.id, `Hi ${it.contact.data?.firstName as string}`, `<p>${it.contact.data?.firstName as string}</p>`, [1, 3].includes(n) ? 'CANCELLED' : 'PENDING']),
    );
    const jobs = await jobsOf(t.db, results.map((r) => r.emailId ?? ''));
    expect(jobs.map((j) => j.key).sort()).toEqual([results[0], results[2], results[4]].map((r) => r?.emailId).sort());
    expect(jobs.every((j) => j.priority === JobPriority.workflow)).toBe(true);
  });

  it('a re-run of the batch writes nothing (all duplicates); an item repeated inside a batch is written once, the first', async () => {
    const s = await setup();
    const id = await template(s, { subject: 'Hi', body: '<p>{{event.n}}</p>' });
    const [a, b] = [await contact(s, 'a'), await contact(s, 'b')];
    const stepId = randomUUID();
    const items = [item(a, stepId), item(b, stepId)];
    const first = await batch(s, id, items);
    expect(first.map((r) => r.outcome)).toEqual(['queued', 'queued']);
    const again = await batch(s, id, [item(await contact(s, 'new'), stepId), ...items]);
    expect(again.map((r) => [r.outcome, r.emailId === null])).toEqual([['queued', false], ['duplicate', true], ['duplicate', true]]);

    const executionId = randomUUID();
    const inside = await batch(s, id, [item(a, stepId, executionId), item(b, stepId, executionId), item(b, stepId)]);
    expect(inside.map((r) => r.outcome)).toEqual(['queued', 'duplicate', 'queued']);
    const rows = await t.db.db.selectFrom('emails').select(['id', 'contact_id']).where('workflow_execution_id', '=', executionId).execute();
    expect(rows).toEqual([{ id: inside[0]?.emailId, contact_id: a.id }]);
    const all = await t.db.db.selectFrom('emails').select('id').where('workflow_step_id', '=', stepId).execute();
    expect(all).toHaveLength(5);
    expect(await jobsOf(t.db, all.map((r) => r.id))).toHaveLength(5);
  });

  it('an empty batch writes nothing and reads nothing (even an unknown template)', async () => {
    const s = await setup();
    expect(await batch(s, randomUUID(), [])).toEqual([]);
  });
});

describe('countWorkflowStepEmails', () => {
  it('counts each step\'s milestones once reached, later ones included in earlier ones; other projects and steps apart', async () => {
    const s = await setup();
    const id = await template(s, { subject: 'Hi', body: '<p>Hi</p>' });
    const [stepA, stepB, stepC] = [randomUUID(), randomUUID(), randomUUID()];
    const ids: string[] = [];
    for (const stepId of [stepA, stepA, stepA, stepA, stepB]) {
      const r = await queue(s, id, { workflow: { executionId: randomUUID(), stepId } });
      ids.push(r.emailId ?? '');
    }
    // ids[0] stays PENDING: counted nowhere.
    const [, sent = '', clicked = '', bounced = '', other = ''] = ids;
    await sql`UPDATE emails SET status = 'SENT', sent_at = now() WHERE id = ${sent}`.execute(t.db.db);
    await sql`UPDATE emails SET status = 'CLICKED', sent_at = now(), delivered_at = now(), opened_at = now(), clicked_at = now() WHERE id = ${clicked}`.execute(t.db.db);
    await sql`UPDATE emails SET status = 'BOUNCED', sent_at = now(), bounced_at = now() WHERE id = ${bounced}`.execute(t.db.db);
    await sql`UPDATE emails SET status = 'OPENED', sent_at = now(), opened_at = now() WHERE id = ${other}`.execute(t.db.db);

    const counts = await countWorkflowStepEmails(t.db.db, s.project.id, [stepA, stepB, stepC]);
    expect(counts.get(stepA)).toEqual({ sent: 3, delivered: 1, opened: 1, clicked: 1, bounced: 1 });
    expect(counts.get(stepB)).toEqual({ sent: 1, delivered: 0, opened: 1, clicked: 0, bounced: 0 });
    expect(counts.has(stepC)).toBe(false);
    const elsewhere = await setup();
    expect((await countWorkflowStepEmails(t.db.db, elsewhere.project.id, [stepA])).size).toBe(0);
    expect((await countWorkflowStepEmails(t.db.db, s.project.id, [])).size).toBe(0);
  });
});

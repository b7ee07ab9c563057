import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContactEmail, ContactEmailList } from '../../../src/modules/emails/emails.schema.js';
import { recordMilestone } from '../../../src/modules/emails/status.js';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { createSendTestApp, newSender, send, type SendAnswer, type SendTestApp, type Sender, waitForStatus } from './helpers.js';

/** GET /emails/contact/:contactId (docs/sending.md "A contact's emails"), capture mode with a worker. */

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(() => t?.close());

const list = (project: TestProject, contactId: string, query = '') =>
  t.app.inject({ method: 'GET', url: `/emails/contact/${contactId}${query}`, headers: bearer(project.secret) });

async function listOk(project: TestProject, contactId: string, query = ''): Promise<ContactEmailList> {
  const res = await list(project, contactId, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<ContactEmailList>();
}

async function newContact(projectId: string, email = `c-${randomUUID().slice(0, 8)}@rcpt.example`): Promise<{ id: string; email: string }> {
  return t.db.db.insertInto('contacts').values({ project_id: projectId, email, subscribed: true }).returning(['id', 'email']).executeTakeFirstOrThrow();
}

/** Email rows written directly (the list only reads them), with the given creation times. */
async function insertEmails(s: Sender, contact: { id: string; email: string }, rows: { createdAt: string; subject?: string; campaignId?: string; templateId?: string; stepId?: string }[]) {
  const inserted = await t.db.db
    .insertInto('emails')
    .values(
      rows.map((r, i) => ({
        project_id: s.project.id,
        contact_id: contact.id,
        source: r.campaignId ? ('CAMPAIGN' as const) : r.stepId ? ('WORKFLOW' as const) : ('SEND' as const),
        type: 'TRANSACTIONAL' as const,
        campaign_id: r.campaignId ?? null,
        template_id: r.templateId ?? null,
        workflow_step_id: r.stepId ?? null,
        to_email: contact.email,
        from_email: s.from,
        subject: r.subject ?? `Email ${i}`,
        html: '<p>x</p>',
        message_id: `<${randomUUID()}@${s.domain}>`,
        status: 'SENT' as const,
        sent_at: new Date(r.createdAt),
        created_at: new Date(r.createdAt),
      })),
    )
    .returning('id')
    .execute();
  return inserted.map((r) => r.id);
}

describe('GET /emails/contact/:contactId', () => {
  it("lists the contact's emails newest first with status, milestones and the campaign, template and workflow they came from", async () => {
    const s = await newSender(t);
    const contact = await newContact(s.project.id);
    const other = await newContact(s.project.id);
    const campaign = await t.app.inject({
      method: 'POST',
      url: '/campaigns',
      headers: bearer(s.project.secret),
      payload: { name: 'Spring launch', subject: 'Hi', body: '<p>x</p>', from: s.from },
    });
    expect(campaign.statusCode, campaign.body).toBe(201);
    const campaignId = campaign.json<{ data: { id: string } }>().data.id;
    const template = await t.db.db.insertInto('templates').values({ project_id: s.project.id, name: 'Receipt', subject: 'Receipt', body: '<p>r</p>', from_email: s.from }).returning('id').executeTakeFirstOrThrow();
    const workflow = await t.db.db.insertInto('workflows').values({ project_id: s.project.id, name: 'Onboarding', trigger_config: JSON.stringify({ eventName: 'signup' }) }).returning('id').executeTakeFirstOrThrow();
    const step = await t.db.db.insertInto('workflow_steps').values({ project_id: s.project.id, workflow_id: workflow.id, type: 'SEND_EMAIL', name: 'Welcome' }).returning('id').executeTakeFirstOrThrow();

    const [fromCampaign, fromTemplate, fromWorkflow] = await insertEmails(s, contact, [
      { createdAt: '2026-03-01T10:00:00.000Z', subject: 'Spring {{firstName}}', campaignId },
      { createdAt: '2026-03-02T10:00:00.000Z', subject: 'Your receipt', templateId: template.id },
      { createdAt: '2026-03-03T10:00:00.000Z', subject: 'Welcome aboard', templateId: template.id, stepId: step.id },
    ]);
    await insertEmails(s, other, [{ createdAt: '2026-03-04T10:00:00.000Z', subject: 'Not yours' }]);
    await t.db.db.transaction().execute(async (trx) => {
      await recordMilestone(trx, { emailId: fromTemplate ?? '', status: 'DELIVERED' });
      await recordMilestone(trx, { emailId: fromWorkflow ?? '', status: 'CLICKED' });
      await recordMilestone(trx, { emailId: fromCampaign ?? '', status: 'BOUNCED' });
    });

    const page = await listOk(s.project, contact.id);
    expect(page).toMatchObject({ hasMore: false, cursor: null, total: 3 });
    expect(page.data.map((e) => e.id)).toEqual([fromWorkflow, fromTemplate, fromCampaign]);
    const [wf, tpl, camp] = page.data as [ContactEmail, ContactEmail, ContactEmail];
    expect(wf).toMatchObject({
      subject: 'Welcome aboard',
      status: 'CLICKED',
      source: 'WORKFLOW',
      to: contact.email,
      workflow: { id: workflow.id, name: 'Onboarding' },
      template: { id: template.id, name: 'Receipt' },
      campaign: null,
      createdAt: '2026-03-03T10:00:00.000Z',
      sentAt: '2026-03-03T10:00:00.000Z',
      clickCount: 1,
    });
    expect(wf.clickedAt).toEqual(expect.any(String));
    expect(tpl).toMatchObject({ status: 'DELIVERED', template: { id: template.id, name: 'Receipt' }, workflow: null, campaign: null, bouncedAt: null });
    expect(tpl.deliveredAt).toEqual(expect.any(String));
    expect(camp).toMatchObject({ status: 'BOUNCED', source: 'CAMPAIGN', subject: 'Spring {{firstName}}', campaign: { id: campaignId, name: 'Spring launch' }, template: null });
    expect(camp.bouncedAt).toEqual(expect.any(String));

    // A deleted template leaves the email listed, without its name.
    await t.db.db.deleteFrom('workflow_steps').where('id', '=', step.id).execute();
    await t.db.db.deleteFrom('templates').where('id', '=', template.id).execute();
    const after = await listOk(s.project, contact.id);
    expect(after.data.map((e) => [e.id, e.template, e.workflow])).toEqual([
      [fromWorkflow, null, null],
      [fromTemplate, null, null],
      [fromCampaign, null, null],
    ]);
  });

  it('pages by cursor through emails created at the same instant without repeating or skipping one', async () => {
    const s = await newSender(t);
    const contact = await newContact(s.project.id);
    // 25 emails over 5 distinct instants (5 per instant: ties settle on the id), microseconds included.
    const times = ['2026-01-01T00:00:00.000001Z', '2026-01-01T00:00:00.000002Z', '2026-01-02T00:00:00Z', '2026-01-03T00:00:00.5Z', '2026-01-04T00:00:00Z'];
    const rows = times.flatMap((at) => Array.from({ length: 5 }, () => ({ createdAt: at })));
    // Dates lose microseconds: write the exact instants with SQL.
    const ids = await insertEmails(s, contact, rows);
    await sql`UPDATE emails SET created_at = v.at::timestamptz FROM unnest(${ids}::uuid[], ${rows.map((r) => r.createdAt)}::text[]) AS v(id, at) WHERE emails.id = v.id`.execute(t.db.db);
    const expected = (
      await sql<{ id: string }>`SELECT id FROM emails WHERE contact_id = ${contact.id} ORDER BY created_at DESC, id DESC`.execute(t.db.db)
    ).rows.map((r) => r.id);

    const seen: string[] = [];
    const totals: number[] = [];
    let cursor: string | null = null;
    do {
      const page: ContactEmailList = await listOk(s.project, contact.id, `?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.data.map((e) => e.id));
      totals.push(page.total);
      expect(page.hasMore).toBe(page.cursor !== null);
      cursor = page.cursor;
    } while (cursor);
    expect(seen).toEqual(expected);
    expect(totals).toEqual([25, 0, 0, 0]);
  });

  it('limit: default 20, over 100 clamped, 0 and non-numbers 422; an empty cursor is the first page', async () => {
    const s = await newSender(t);
    const contact = await newContact(s.project.id);
    await insertEmails(s, contact, Array.from({ length: 21 }, (_, i) => ({ createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString() })));
    expect((await listOk(s.project, contact.id)).data).toHaveLength(20);
    expect((await listOk(s.project, contact.id, '?limit=500')).data).toHaveLength(21);
    expect((await listOk(s.project, contact.id, '?cursor=')).data).toHaveLength(20);
    expectEnvelope(await list(s.project, contact.id, '?limit=0'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list(s.project, contact.id, '?limit=abc'), 422, 'VALIDATION_ERROR');
  });

  it("is 404 for another project's contact, an unknown and a malformed id; 422 for a forged cursor", async () => {
    const a = await newSender(t);
    const b = await newSender(t);
    const theirs = await newContact(b.project.id);
    await insertEmails(b, theirs, [{ createdAt: '2026-02-01T00:00:00Z', subject: 'Private' }]);
    const res = await list(a.project, theirs.id);
    expectEnvelope(res, 404, 'NOT_FOUND');
    expect(res.body).not.toContain('Private');
    expectEnvelope(await list(a.project, randomUUID()), 404, 'NOT_FOUND');
    expectEnvelope(await list(a.project, 'not-a-uuid'), 404, 'NOT_FOUND');
    // The owner sees it.
    expect((await listOk(b.project, theirs.id)).data.map((e) => e.subject)).toEqual(['Private']);

    const mine = await newContact(a.project.id);
    const forged = (text: string) => Buffer.from(text).toString('base64url');
    for (const cursor of ['%%%', forged('2026-02-30T00:00:00.000000Z|' + randomUUID()), forged('2026-02-01T00:00:00.000000Z|x'), forged('yesterday')]) {
      const bad = await list(a.project, mine.id, `?cursor=${cursor}`);
      expectEnvelope(bad, 422, 'VALIDATION_ERROR');
      expect(bad.json<{ error: { errors: { field: string }[] } }>().error.errors[0]?.field).toBe('cursor');
    }
  });

  it('shows an email sent with /v1/send and a template as it moves: PENDING or SENT, then DELIVERED', async () => {
    const s = await newSender(t);
    const created = await t.app.inject({ method: 'POST', url: '/templates', headers: bearer(s.project.secret), payload: { name: 'Order shipped', subject: 'Shipped', body: '<p>On its way</p>', from: s.from, type: 'TRANSACTIONAL' } });
    expect(created.statusCode, created.body).toBe(201);
    const templateId = created.json<{ id: string }>().id;
    const res = await send(t.app, s.project, { to: 'buyer@rcpt.example', template: templateId });
    expect(res.statusCode, res.body).toBe(200);
    const [item] = res.json<SendAnswer>().data.emails;
    if (!item) throw new Error('no email in the answer');
    const first = await listOk(s.project, item.contact.id);
    expect(first.data).toHaveLength(1);
    expect(first.data[0]).toMatchObject({ id: item.email, subject: 'Shipped', source: 'SEND', template: { id: templateId, name: 'Order shipped' } });
    expect(['PENDING', 'SENDING', 'SENT']).toContain(first.data[0]?.status);

    await waitForStatus(t.db, [item.email], ['SENT']);
    await t.db.db.transaction().execute((trx) => recordMilestone(trx, { emailId: item.email, status: 'DELIVERED' }));
    const later = await listOk(s.project, item.contact.id);
    expect(later.data[0]).toMatchObject({ status: 'DELIVERED', unconfirmed: false, error: null });
    expect(Date.parse(later.data[0]?.deliveredAt ?? '')).toBeGreaterThanOrEqual(Date.parse(later.data[0]?.sentAt ?? ''));
  });
});

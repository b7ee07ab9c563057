import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import { bearer, type TestProject } from '../../helpers/accounts.js';

export interface ItemJson {
  id: string;
  type: string;
  timestamp: string;
  contact?: { id: string; email: string };
  metadata: Record<string, unknown>;
}
export interface ListJson {
  data: ItemJson[];
  cursor: string | null;
  hasMore: boolean;
  total: number;
  totalCapped: boolean;
}

export const get = (app: FastifyInstance, project: TestProject, url: string) => app.inject({ method: 'GET', url, headers: bearer(project.secret) });

export async function feed(app: FastifyInstance, project: TestProject, query = ''): Promise<ListJson> {
  const res = await get(app, project, `/activity${query ? `?${query}` : ''}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<ListJson>();
}

/** Every item of the feed, page by page (`limit` per page); asserts the pages' shape as it goes. */
export async function allPages(app: FastifyInstance, project: TestProject, query: string, limit: number, between?: () => Promise<void>): Promise<ItemJson[]> {
  const items: ItemJson[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const page: ListJson = await feed(app, project, [query, `limit=${limit}`, cursor ? `cursor=${cursor}` : ''].filter(Boolean).join('&'));
    expect(page.data.length).toBeLessThanOrEqual(limit);
    if (cursor) expect(page.total).toBe(0);
    items.push(...page.data);
    if (!page.hasMore) {
      expect(page.cursor).toBeNull();
      return items;
    }
    cursor = page.cursor;
    await between?.();
  }
  throw new Error('more than 1000 pages');
}

const minutes = (base: Date, m: number) => new Date(base.getTime() + m * 60_000);

/** What {@link seedKnownActivity} wrote: ids by name and the expected feed, newest first. */
export interface KnownActivity {
  base: Date;
  contacts: { alice: { id: string; email: string }; bob: { id: string; email: string } };
  templateId: string;
  campaigns: { sent: string; scheduled: string; cancelled: string; draft: string };
  workflowId: string;
  emails: { campaign: string; direct: string; workflow: string };
  segmentId: string;
  oldEventId: string;
  /** [type, id] of every item in the default window, newest first. */
  expected: [string, string][];
}

/**
 * One of each kind of activity, written as the modules write their rows, at known times: `base`
 * (2 hours ago) + 1…22 minutes, items of several sources sharing the last instant, and one
 * tracked event 40 days old (outside the default window). Names carry `tag` so that two
 * projects' data tell apart.
 */
export async function seedKnownActivity(db: Db, projectId: string, tag = 'p'): Promise<KnownActivity> {
  const base = new Date(Date.now() - 2 * 3600_000);
  const d = db.db;
  const contact = (name: string) =>
    d.insertInto('contacts').values({ project_id: projectId, email: `${name}-${randomUUID()}@act.example`, subscribed: true }).returning(['id', 'email']).executeTakeFirstOrThrow();
  const alice = await contact(`alice-${tag}`);
  const bob = await contact(`bob-${tag}`);
  const template = await d
    .insertInto('templates')
    .values({ project_id: projectId, name: `Welcome template ${tag}`, subject: 'Welcome', body: '<p>Hi</p>', from_email: 'hi@act.example', from_name: null, reply_to: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  const campaign = (values: { name: string; status: 'DRAFT' | 'SCHEDULED' | 'SENT' | 'CANCELLED'; scheduled_for?: Date; sent_at?: Date; cancelled_at?: Date }) =>
    d
      .insertInto('campaigns')
      .values({ project_id: projectId, subject: `Subject of ${values.name}`, from_email: 'news@act.example', total_recipients: 2, ...values })
      .returning('id')
      .executeTakeFirstOrThrow();
  const sent = await campaign({ name: `Spring sale ${tag}`, status: 'SENT', scheduled_for: minutes(base, 1), sent_at: minutes(base, 2) });
  const scheduled = await campaign({ name: `Summer ${tag}`, status: 'SCHEDULED', scheduled_for: new Date(Date.now() + 2 * 86_400_000) });
  const cancelled = await campaign({ name: `Dropped ${tag}`, status: 'CANCELLED', scheduled_for: minutes(base, 50), cancelled_at: minutes(base, 40) });
  const draft = await campaign({ name: `Draft ${tag}`, status: 'DRAFT' });

  const workflow = await d
    .insertInto('workflows')
    .values({ project_id: projectId, name: `Onboarding ${tag}`, trigger_config: JSON.stringify({ eventName: 'signed_up' }), enabled: false })
    .returning('id')
    .executeTakeFirstOrThrow();
  const step = await d
    .insertInto('workflow_steps')
    .values({ project_id: projectId, workflow_id: workflow.id, type: 'SEND_EMAIL', name: 'Mail', config: JSON.stringify({ templateId: template.id }), template_id: template.id })
    .returning('id')
    .executeTakeFirstOrThrow();
  const execution = (contactId: string, status: 'RUNNING' | 'COMPLETED' | 'FAILED' | 'EXITED', started: number, ended?: number, extra: { error?: string; exit_reason?: string } = {}) =>
    d
      .insertInto('workflow_executions')
      .values({
        project_id: projectId,
        workflow_id: workflow.id,
        contact_id: contactId,
        status,
        started_at: minutes(base, started),
        completed_at: ended === undefined ? null : minutes(base, ended),
        ...extra,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
  const x1 = await execution(alice.id, 'COMPLETED', 9, 10);
  const x2 = await execution(bob.id, 'FAILED', 11, 12, { error: 'boom' });
  const x3 = await execution(alice.id, 'EXITED', 13, 14, { exit_reason: 'done early' });
  const x4 = await execution(bob.id, 'RUNNING', 15);

  const email = (to: { id: string; email: string }, values: { campaign_id?: string; workflow_execution_id?: string; workflow_step_id?: string; subject: string }) =>
    d
      .insertInto('emails')
      .values({
        project_id: projectId,
        contact_id: to.id,
        source: values.campaign_id ? 'CAMPAIGN' : values.workflow_step_id ? 'WORKFLOW' : 'SEND',
        type: 'MARKETING',
        template_id: template.id,
        to_email: to.email,
        from_email: 'news@act.example',
        from_name: null,
        reply_to: null,
        to_name: null,
        html: '<p>Hi</p>',
        text: null,
        attachment_set_id: null,
        message_id: `${randomUUID()}@act.example`,
        error: null,
        end_of_data_at: null,
        sent_at: null,
        delivered_at: null,
        opened_at: null,
        clicked_at: null,
        bounced_at: null,
        complained_at: null,
        failed_at: null,
        campaign_id: null,
        ...values,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
  const e1 = await email(alice, { campaign_id: sent.id, subject: `Spring is here ${tag}` });
  const e2 = await email(bob, { subject: `Your receipt ${tag}` });
  const e3 = await email(bob, { workflow_execution_id: x4.id, workflow_step_id: step.id, subject: `Welcome aboard ${tag}` });

  const event = (contactId: string, name: string, at: Date, data: object = {}) =>
    d.insertInto('events').values({ project_id: projectId, contact_id: contactId, name, data: JSON.stringify(data), created_at: at }).returning('id').executeTakeFirstOrThrow();
  const segmentId = randomUUID();
  const ids = {
    sent1: await event(alice.id, 'email.sent', minutes(base, 3), { emailId: e1.id, messageId: 'm1' }),
    delivery: await event(alice.id, 'email.delivery', minutes(base, 4), { emailId: e1.id }),
    open: await event(alice.id, 'email.open', minutes(base, 5), { emailId: e1.id }),
    click: await event(alice.id, 'email.click', minutes(base, 6), { emailId: e1.id, url: 'https://act.example/offer' }),
    bounce: await event(bob.id, 'email.bounce', minutes(base, 7), { emailId: e2.id, bounceType: 'Permanent' }),
    complaint: await event(bob.id, 'email.complaint', minutes(base, 8), { emailId: e2.id }),
    sent3: await event(bob.id, 'email.sent', minutes(base, 16), { emailId: e3.id }),
    unsub: await event(bob.id, 'contact.unsubscribed', minutes(base, 17)),
    sub: await event(bob.id, 'contact.subscribed', minutes(base, 18)),
    entry: await event(alice.id, 'segment.vip-users.entry', minutes(base, 19), { segmentId, segmentName: 'VIP Users' }),
    exit: await event(alice.id, 'segment.vip-users.exit', minutes(base, 20), { segmentId, segmentName: 'VIP Users' }),
    tracked: await event(alice.id, 'signed_up', minutes(base, 21), { plan: 'pro' }),
    tieA: await event(alice.id, 'page_viewed', minutes(base, 22), { path: '/a' }),
    tieB: await event(alice.id, 'page_viewed', minutes(base, 22), { path: '/b' }),
  };
  const x5 = await execution(alice.id, 'RUNNING', 22);
  const old = await event(alice.id, 'signed_up', new Date(Date.now() - 40 * 86_400_000), { plan: 'old' });
  // One instant: the execution (rank above events) first, then the two events by id, descending.
  const ties = [ids.tieA.id, ids.tieB.id].sort().reverse();
  const expected: [string, string][] = [
    ['workflow.started', `${x5.id}:started`],
    ['event.tracked', ties[0] ?? ''],
    ['event.tracked', ties[1] ?? ''],
    ['event.tracked', ids.tracked.id],
    ['segment.exit', ids.exit.id],
    ['segment.entry', ids.entry.id],
    ['contact.subscribed', ids.sub.id],
    ['contact.unsubscribed', ids.unsub.id],
    ['email.sent', ids.sent3.id],
    ['workflow.started', `${x4.id}:started`],
    ['workflow.completed', `${x3.id}:completed`],
    ['workflow.started', `${x3.id}:started`],
    ['workflow.failed', `${x2.id}:failed`],
    ['workflow.started', `${x2.id}:started`],
    ['workflow.completed', `${x1.id}:completed`],
    ['workflow.started', `${x1.id}:started`],
    ['email.complaint', ids.complaint.id],
    ['email.bounce', ids.bounce.id],
    ['email.click', ids.click.id],
    ['email.open', ids.open.id],
    ['email.delivery', ids.delivery.id],
    ['email.sent', ids.sent1.id],
    ['campaign.sent', `${sent.id}:sent`],
    ['campaign.scheduled', `${sent.id}:scheduled`],
  ];
  return {
    base,
    contacts: { alice, bob },
    templateId: template.id,
    campaigns: { sent: sent.id, scheduled: scheduled.id, cancelled: cancelled.id, draft: draft.id },
    workflowId: workflow.id,
    emails: { campaign: e1.id, direct: e2.id, workflow: e3.id },
    segmentId,
    oldEventId: old.id,
    expected,
  };
}

export const pairs = (items: ItemJson[]): [string, string][] => items.map((i) => [i.type, i.id]);

import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import type { CampaignStatus } from '../../../src/db/schema.js';
import { Tasks } from '../../../src/jobs/index.js';
import type { Campaign } from '../../../src/modules/campaigns/campaigns.schema.js';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { jobsOf, newSender, type Sender, type SendTestApp } from '../emails/helpers.js';

export type { Sender };

/** A fresh project with a verified sender domain; campaign mail comes from `news@`. */
export const sender = (t: SendTestApp): Promise<Sender> => newSender(t, 'news');

export const api = (app: FastifyInstance, project: TestProject, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
  app.inject({ method, url, headers: bearer(project.secret), ...(payload !== undefined && { payload }) });

export async function createCampaign(t: SendTestApp, s: Sender, body: object = {}): Promise<Campaign> {
  const res = await api(t.app, s.project, 'POST', '/campaigns', { name: 'Launch', subject: 'Hi {{firstName ?? there}}', body: '<p>Hello {{firstName}}</p>', from: s.from, ...body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ data: Campaign }>().data;
}

/** `n` contacts, set-based; every `unsubscribedEvery`-th one unsubscribed; data.firstName = "Name<i>". */
export async function seedContacts(db: Db, projectId: string, n: number, opts: { unsubscribedEvery?: number; tag?: string } = {}) {
  const every = opts.unsubscribedEvery ?? 0;
  const tag = opts.tag ?? 'c';
  const { rows } = await sql<{ id: string; email: string; subscribed: boolean }>`
    INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ${projectId}, ${tag} || i || '@rcpt.example', NOT (${every}::int > 0 AND i % ${every}::int = 0),
           jsonb_build_object('firstName', 'Name' || i, 'plan', CASE WHEN i % 2 = 0 THEN 'pro' ELSE 'free' END)
    FROM generate_series(1, ${n}::int) AS i
    RETURNING id, email, subscribed`.execute(db.db);
  return rows;
}

export async function waitForCampaign(t: SendTestApp, id: string, statuses: readonly CampaignStatus[], timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    if (statuses.includes(row.status)) return row;
    if (Date.now() > deadline) throw new Error(`campaign ${id} still ${row.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const emailsOf = (t: SendTestApp, campaignId: string) =>
  t.db.db.selectFrom('emails').selectAll().where('campaign_id', '=', campaignId).execute();

/**
 * Polls until no delivery job of the campaign is left (its batches, and its emails' own jobs):
 * after that nothing of the campaign can reach the SMTP sink any more (a job is deleted only after
 * its relay's 250, and the sink records a message before answering it). For "nothing more
 * arrived" checks, instead of a sleep.
 */
export async function waitForNoEmailJobs(t: SendTestApp, campaignId: string, timeoutMs = 20_000): Promise<void> {
  const ids = (await emailsOf(t, campaignId)).map((e) => e.id);
  const left = async () => {
    const { rows: batches } = await sql<{ key: string }>`
      SELECT key FROM graphile_worker._private_jobs WHERE key LIKE ${`${Tasks.campaignDeliver}:%:${campaignId}`}`.execute(t.db.db);
    return [...batches, ...(await jobsOf(t.db, ids))];
  };
  await until(`no delivery job left for campaign ${campaignId}`, async () => (await left()).length === 0, {
    timeoutMs,
    intervalMs: 50,
    why: async () => JSON.stringify((await left()).slice(0, 5)),
  });
}

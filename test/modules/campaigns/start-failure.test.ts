import { Logger, runOnce } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskList, Tasks } from '../../../src/jobs/index.js';
import type { Campaign } from '../../../src/modules/campaigns/campaigns.schema.js';
import { runCampaignSend, START_MAX_ATTEMPTS, startJobKey, sweepCampaigns } from '../../../src/modules/campaigns/fanout.js';
import { classifyStartFailure, handleStartFailure } from '../../../src/modules/campaigns/start-failure.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { api, createCampaign, emailsOf, seedContacts, type Sender, sender } from './helpers.js';

/**
 * A campaign whose send job cannot proceed ends CANCELLED with a machine-readable reason,
 * visible on GET /campaigns/:id, never SENDING forever (docs/campaigns.md). The stored audiences
 * are made unusable directly in the database, as data stored before stricter validation would be.
 */
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(() => t?.close());

/** A condition that passes the tree schema and compiles, but fails in PostgreSQL (22008: no 30 February). */
const IMPOSSIBLE_DATE = { logic: 'AND', groups: [{ filters: [{ field: 'createdAt', operator: 'greaterThan', value: '2024-02-30' }] }] };

async function dynamicSegment(s: Sender, condition: object): Promise<string> {
  const { rows } = await sql<{ id: string }>`
    INSERT INTO segments (project_id, name, type, condition)
    VALUES (${s.project.id}, 'broken', 'DYNAMIC', ${JSON.stringify(condition)}::jsonb) RETURNING id`.execute(t.db.db);
  return rows[0]?.id ?? '';
}

/** Polls GET /campaigns/:id (bounded) until it leaves SENDING/SCHEDULED; returns the answer. */
async function pollUntilSettled(s: Sender, id: string, timeoutMs = 20_000): Promise<Campaign> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const campaign = (await api(t.app, s.project, 'GET', `/campaigns/${id}`)).json<Campaign>();
    if (campaign.status !== 'SENDING' && campaign.status !== 'SCHEDULED') return campaign;
    if (Date.now() > deadline) throw new Error(`campaign ${id} still ${campaign.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs each job due now once, in this process (call with the file's worker stopped): a job that
 * throws is rescheduled with backoff (e^attempts s), so it does not run again here. What this
 * leaves behind is what one attempt did, however slow the machine.
 */
async function runDueJobsOnce(): Promise<void> {
  await runOnce({ pgPool: t.db.pool, taskList: createTaskList(t.deps), logger: new Logger(() => () => undefined) });
}

const startJob = async (campaignId: string) => {
  const { rows } = await sql<{ attempts: number; max_attempts: number }>`
    SELECT attempts, max_attempts FROM graphile_worker._private_jobs WHERE key = ${startJobKey(campaignId)}`.execute(t.db.db);
  return rows[0];
};

describe('a campaign whose audience cannot be evaluated', () => {
  // The compiler checks stored trees again (src/conditions): the impossible date is refused before any SQL runs.
  it('SEGMENT on a stored condition with an impossible date: CANCELLED at the first attempt, reason on GET /campaigns/:id', async () => {
    const s = await sender(t);
    await seedContacts(t.db, s.project.id, 3, { tag: `d${Date.now()}-` });
    const segmentId = await dynamicSegment(s, IMPOSSIBLE_DATE);
    const c = await createCampaign(t, s, { audienceType: 'SEGMENT', segmentId });
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).json()).toMatchObject({ data: { status: 'SENDING' } });
      await runDueJobsOnce();
    });

    // No retry with backoff: the one attempt ended it (a retried job would be waiting its backoff).
    const got = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>();
    expect(got).toMatchObject({
      status: 'CANCELLED',
      cancelledAt: expect.any(String),
      totalRecipients: 0,
      statusReason: { code: 'AUDIENCE_UNUSABLE', message: expect.stringMatching(/^The stored audience condition is no longer valid \(condition\.groups\.0\.filters\.0\.value: .+\)/) },
    });
    expect(await startJob(c.id)).toBeUndefined();
    expect(await emailsOf(t, c.id)).toEqual([]);
  });

  it('a PostgreSQL data exception during the fan-out (22008): CANCELLED at the first attempt, the exception named, nothing materialised', async () => {
    const s = await sender(t);
    await seedContacts(t.db, s.project.id, 3, { tag: `p${Date.now()}-` });
    const c = await createCampaign(t, s);
    // Stands in for stored data PostgreSQL refuses to read: raised by the fan-out's INSERT … SELECT itself.
    await sql`
      CREATE FUNCTION refuse_${sql.raw(c.id.replace(/-/g, ''))}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'date/time field value out of range: "2024-02-30"' USING ERRCODE = '22008'; END $$`.execute(t.db.db);
    await sql`
      CREATE TRIGGER refuse_${sql.raw(c.id.replace(/-/g, ''))} BEFORE INSERT ON emails FOR EACH ROW
      WHEN (NEW.campaign_id = ${sql.lit(c.id)}::uuid) EXECUTE FUNCTION refuse_${sql.raw(c.id.replace(/-/g, ''))}()`.execute(t.db.db);
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
      await runDueJobsOnce();
    });
    // Ended by its one attempt, like the test above.
    expect((await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>()).toMatchObject({
      status: 'CANCELLED',
      statusReason: { code: 'AUDIENCE_UNUSABLE', message: expect.stringMatching(/2024-02-30.*SQLSTATE 22008/) },
    });
    expect(await startJob(c.id)).toBeUndefined();
    expect(await emailsOf(t, c.id)).toEqual([]);
  });

  it('FILTERED whose stored condition no longer parses, and SEGMENT whose segment was deleted: CANCELLED, AUDIENCE_UNUSABLE', async () => {
    const s = await sender(t);
    await seedContacts(t.db, s.project.id, 2, { tag: `f${Date.now()}-` });
    const filtered = await createCampaign(t, s, {
      audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    });
    const segmentId = await dynamicSegment(s, { logic: 'AND', groups: [] });
    const bySegment = await createCampaign(t, s, { audienceType: 'SEGMENT', segmentId });
    await t.withWorkerStopped(async () => {
      for (const c of [filtered, bySegment]) expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
      await sql`UPDATE campaigns SET audience_condition = '{"logic":"XOR","groups":"none"}' WHERE id = ${filtered.id}`.execute(t.db.db);
      await sql`UPDATE campaigns SET segment_id = NULL WHERE id = ${bySegment.id}`.execute(t.db.db);
      await sql`DELETE FROM segments WHERE id = ${segmentId}`.execute(t.db.db);
    });
    expect(await pollUntilSettled(s, filtered.id)).toMatchObject({
      status: 'CANCELLED',
      statusReason: { code: 'AUDIENCE_UNUSABLE', message: expect.stringMatching(/condition is no longer valid/) },
    });
    expect(await pollUntilSettled(s, bySegment.id)).toMatchObject({
      status: 'CANCELLED',
      statusReason: { code: 'AUDIENCE_UNUSABLE', message: expect.stringMatching(/segment no longer exists/) },
    });
  });

  it('the sweep restarts a start job that exhausted its attempts: the campaign still ends CANCELLED, not SENDING', async () => {
    const s = await sender(t);
    const segmentId = await dynamicSegment(s, IMPOSSIBLE_DATE);
    const c = await createCampaign(t, s, { audienceType: 'SEGMENT', segmentId });
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
      expect(await startJob(c.id)).toEqual({ attempts: 0, max_attempts: START_MAX_ATTEMPTS });
      // As a job queued before the bound (25 attempts) that used them all: graphile-worker keeps it, never runs it again.
      await sql`UPDATE graphile_worker._private_jobs SET attempts = 25, max_attempts = 25 WHERE key = ${startJobKey(c.id)}`.execute(t.db.db);
      expect((await sweepCampaigns(t.db.db)).restarted).toBeGreaterThanOrEqual(1);
      expect(await startJob(c.id)).toEqual({ attempts: 0, max_attempts: START_MAX_ATTEMPTS });
    });
    expect(await pollUntilSettled(s, c.id)).toMatchObject({ status: 'CANCELLED', statusReason: { code: 'AUDIENCE_UNUSABLE' } });
  });
});

describe('the sweep: completion cannot wait forever on emails whose delivery job is gone', () => {
  it('leaves emails of a queued batch alone; re-enqueues emails whose batch is gone, FAILS one whose own job used every attempt; the campaign completes', async () => {
    const s = await sender(t);
    await seedContacts(t.db, s.project.id, 3, { tag: `l${Date.now()}-` });
    const c = await createCampaign(t, s);
    let exhausted = '';
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: 3 });
      [exhausted = ''] = (await emailsOf(t, c.id)).map((e) => e.id);
      // Recent emails are left alone: their jobs may be about to run.
      expect(await sweepCampaigns(t.db.db)).toMatchObject({ recovered: 0 });
      // Old, but their delivery batch is still queued (a big campaign's last batches wait that long).
      await sql`UPDATE emails SET updated_at = now() - interval '11 minutes' WHERE campaign_id = ${c.id}`.execute(t.db.db);
      expect(await sweepCampaigns(t.db.db)).toMatchObject({ recovered: 0 });
      // The batch is lost; one email has a job of its own (a retry) that used every attempt.
      const deleted = await sql`DELETE FROM graphile_worker._private_jobs WHERE key LIKE ${`${Tasks.campaignDeliver}:%:${c.id}`}`.execute(t.db.db);
      expect(deleted.numAffectedRows).toBe(1n);
      await sql`SELECT graphile_worker.add_job(${Tasks.sendEmail}, json_build_object('emailId', ${exhausted}::text), job_key := ${exhausted}, max_attempts := 2)`.execute(t.db.db);
      await sql`UPDATE graphile_worker._private_jobs SET attempts = max_attempts, last_error = 'boom' WHERE key = ${exhausted}`.execute(t.db.db);
      expect(await sweepCampaigns(t.db.db)).toMatchObject({ recovered: 3, completed: 0 });
    });
    const row = await pollUntilSettled(s, c.id);
    expect(row.status).toBe('SENT');
    const emails = await emailsOf(t, c.id);
    expect(emails.find((e) => e.id === exhausted)).toMatchObject({ status: 'FAILED', error: 'Gave up: its delivery job used every attempt: boom' });
    expect(emails.filter((e) => e.id !== exhausted).map((e) => e.status)).toEqual(['SENT', 'SENT']);
  });
});

describe('transient failures of the start', () => {
  const connectionLost = () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });

  it('classifies: data exceptions, compile errors and invalid trees are deterministic; connection, serialization, unknown are not', () => {
    const pg = (code: string) => Object.assign(new Error(`pg ${code}`), { code });
    for (const code of ['22008', '22P02', '42703', '42601', '54000', '23503']) expect(classifyStartFailure(pg(code)).deterministic, code).toBe(true);
    for (const code of ['08006', '40001', '40P01', '57P01', '57014', '53300', 'XX000']) expect(classifyStartFailure(pg(code)).deterministic, code).toBe(false);
    expect(classifyStartFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })).deterministic).toBe(false);
    expect(classifyStartFailure(new Error('Connection terminated unexpectedly')).deterministic).toBe(false);
  });

  it('retried while attempts remain; the last attempt ends it CANCELLED (START_FAILED) and cancels the materialised unsent emails', async () => {
    const s = await sender(t);
    await seedContacts(t.db, s.project.id, 4, { tag: `r${Date.now()}-` });
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, {})).statusCode).toBe(200);
      expect(await runCampaignSend(t.db.db, c.id)).toEqual({ kind: 'materialised', recipients: 4 });

      for (let attempt = 1; attempt < START_MAX_ATTEMPTS; attempt++) {
        const outcome = await handleStartFailure(t.db.db, c.id, connectionLost(), { attempt, maxAttempts: START_MAX_ATTEMPTS });
        expect(outcome.kind, `attempt ${attempt}`).toBe('retry');
      }
      // A job queued with graphile-worker's default of 25 attempts is bounded by START_MAX_ATTEMPTS all the same.
      const last = await handleStartFailure(t.db.db, c.id, connectionLost(), { attempt: START_MAX_ATTEMPTS, maxAttempts: 25 });
      expect(last).toMatchObject({ kind: 'ended', changed: true, failure: { code: 'START_FAILED' } });
    });
    const got = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>();
    expect(got).toMatchObject({ status: 'CANCELLED', statusReason: { code: 'START_FAILED', message: expect.stringMatching(/57P01/) } });
    const emails = await emailsOf(t, c.id);
    expect(emails.map((e) => e.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
    expect(emails[0]?.error).toMatch(/START_FAILED/);
    const stats = (await api(t.app, s.project, 'GET', `/campaigns/${c.id}/stats`)).json<{ cancelled: number; pending: number }>();
    expect(stats).toMatchObject({ cancelled: 4, pending: 0 });
  });

  it('a caller cancel records CANCELLED_BY_USER; a failure after it leaves the campaign as it is', async () => {
    const s = await sender(t);
    const c = await createCampaign(t, s);
    await t.withWorkerStopped(async () => {
      expect((await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`, { scheduledFor: '2099-01-01T00:00:00Z' })).statusCode).toBe(200);
      const cancelled = (await api(t.app, s.project, 'POST', `/campaigns/${c.id}/cancel`)).json<Campaign>();
      expect(cancelled).toMatchObject({ status: 'CANCELLED', statusReason: { code: 'CANCELLED_BY_USER' }, cancelledAt: expect.any(String) });
      const outcome = await handleStartFailure(t.db.db, c.id, new Error('late'), { attempt: START_MAX_ATTEMPTS, maxAttempts: START_MAX_ATTEMPTS });
      expect(outcome).toMatchObject({ kind: 'ended', changed: false });
    });
    expect((await api(t.app, s.project, 'GET', `/campaigns/${c.id}`)).json<Campaign>()).toMatchObject({ statusReason: { code: 'CANCELLED_BY_USER' } });
  });
});

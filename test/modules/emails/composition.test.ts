import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../../src/lib/secret-box.js';
import { MAX_HTML_DEPTH } from '../../../src/mail/html-depth.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { addVerifiedDomain, createSendTestApp, jobsOf, newSender, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

/**
 * HTML nesting is bounded at acceptance (every HTML body field: 422 naming it and the limit),
 * and a stored email that cannot be composed is FAILED at its first attempt with the reason,
 * never retried (docs/sending.md).
 */
let t: SendTestApp;
let project: TestProject;
let from: string;
beforeAll(async () => {
  t = await createSendTestApp();
  ({ project, from } = await newSender(t));
});
afterAll(() => t?.close());

/** Polls (bounded) until the email's send job is gone: graphile-worker deletes it once the task returns without throwing. */
async function jobGone(emailId: string, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while ((await jobsOf(t.db, [emailId])).length > 0) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

const nested = (n: number) => `${'<div>'.repeat(n)}deep${'</div>'.repeat(n)}`;
const call = (method: 'POST' | 'PUT' | 'PATCH', url: string, payload: object) => t.app.inject({ method, url, headers: bearer(project.secret), payload });
const limitError = (field: string) =>
  expect.arrayContaining([expect.objectContaining({ field, code: 'too_deep', message: expect.stringContaining(`${MAX_HTML_DEPTH} levels`) })]);

describe('HTML nesting limit at acceptance', () => {
  it('/v1/send refuses a body of 3,000 nested elements with 422 on body, writing nothing; 256 levels are accepted', async () => {
    const res = await send(t.app, project, { to: 'deep@example.com', from, subject: 's', body: nested(3000) });
    expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors).toEqual(limitError('body'));
    expect(await t.db.db.selectFrom('emails').select('id').where('to_email', '=', 'deep@example.com').execute()).toEqual([]);
    // nested(255) is 255 divs: MAX_HTML_DEPTH - 1 levels, one under a 256-level body with a child.
    const ok = await send(t.app, project, { to: 'ok@example.com', from, subject: 's', body: `${'<div>'.repeat(MAX_HTML_DEPTH)}x${'</div>'.repeat(MAX_HTML_DEPTH)}` });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('templates (POST and PATCH) and campaigns (create and PUT) refuse it on body too', async () => {
    expect(expectEnvelope(await call('POST', '/templates', { name: 't', subject: 's', body: nested(300), from }), 422, 'VALIDATION_ERROR').errors).toEqual(limitError('body'));
    const tpl = await call('POST', '/templates', { name: 't', subject: 's', body: '<p>ok</p>', from });
    expect(tpl.statusCode, tpl.body).toBeLessThan(300);
    const tplId = tpl.json<{ id?: string; data?: { id: string } }>().id ?? tpl.json<{ data: { id: string } }>().data.id;
    expect(expectEnvelope(await call('PATCH', `/templates/${tplId}`, { body: nested(300) }), 422, 'VALIDATION_ERROR').errors).toEqual(limitError('body'));

    expect(expectEnvelope(await call('POST', '/campaigns', { name: 'c', subject: 's', body: nested(300), from }), 422, 'VALIDATION_ERROR').errors).toEqual(limitError('body'));
    const campaign = await call('POST', '/campaigns', { name: 'c', subject: 's', body: '<p>ok</p>', from });
    expect(campaign.statusCode, campaign.body).toBe(201);
    const id = campaign.json<{ data: { id: string } }>().data.id;
    expect(expectEnvelope(await call('PUT', `/campaigns/${id}`, { body: nested(300) }), 422, 'VALIDATION_ERROR').errors).toEqual(limitError('body'));
  });
});

describe('composition failures at delivery', () => {
  it('a stored email of 3,000 nested elements (bypassing validation) is FAILED at its first attempt with the reason, not retried', async () => {
    let id = '';
    await t.withWorkerStopped(async () => {
      const res = await send(t.app, project, { to: 'stored-deep@example.com', from, subject: 's', body: '<p>fine</p>' });
      [id = ''] = res.json<SendAnswer>().data.emails.map((e) => e.email);
      await t.db.db.updateTable('emails').set({ html: nested(3000) }).where('id', '=', id).execute();
    });
    const [row] = await waitForStatus(t.db, [id], ['FAILED', 'SENT']);
    expect(row).toMatchObject({
      status: 'FAILED',
      failed_at: expect.any(Date),
      error: `Not sent: the message could not be composed (HTML nesting): HTML must not nest elements more than ${MAX_HTML_DEPTH} levels deep`,
    });
    // The job ended with the email (no retry queued), and nothing reached the outbox.
    expect(await jobGone(id)).toBe(true);
    expect(await t.db.db.selectFrom('outbox').select('id').where('envelope_to', '=', 'stored-deep@example.com').execute()).toEqual([]);
  });

  it('a DKIM signing failure is FAILED at once too (a stored private key that is not a key)', async () => {
    const { project: p } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, p.id);
    let id = '';
    await t.withWorkerStopped(async () => {
      const res = await send(t.app, p, { to: 'bad-key@example.com', from: `a@${domain}`, subject: 's', body: '<p>b</p>' });
      [id = ''] = res.json<SendAnswer>().data.emails.map((e) => e.email);
      const sealed = createSecretBox(t.config.secret, 'dkim').seal('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----');
      await t.db.db.updateTable('domains').set({ dkim_private_key: sealed }).where('domain', '=', domain).execute();
    });
    const [row] = await waitForStatus(t.db, [id], ['FAILED', 'SENT']);
    expect(row?.status).toBe('FAILED');
    expect(row?.error).toMatch(/^Not sent: the message could not be composed \(DKIM signature\): /);
    expect(await jobGone(id)).toBe(true);
  });
});

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscriptionUrls, TokenPurpose } from '../../../src/mail/compliance.js';
import { createProject, newProject, signUp, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { contactRow, eventNames, seedContact, seedEmail } from './fixtures.js';

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

/** The hosted-page paths of a contact, as an email would carry them. */
async function pagesFor(p: TestProject, opts: { email?: string; subscribed?: boolean } = {}) {
  const contactId = await seedContact(t.db, p.id, opts);
  const { id: emailId } = await seedEmail(t.db, p.id, { contactId });
  const urls = subscriptionUrls(
    { emailId, projectId: p.id, contactId, type: 'MARKETING', tracking: 'ENABLED' },
    { tokens: t.deps.tokens, publicUrl: t.config.publicUrl },
  );
  const path = (key: string) => String(urls[key]).replace(t.config.publicUrl, '');
  return { contactId, emailId, unsubscribe: path('unsubscribeUrl'), subscribe: path('subscribeUrl'), manage: path('manageUrl') };
}

const get = (url: string) => t.app.inject({ method: 'GET', url });
const postForm = (url: string, form = '') =>
  t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: form });

/** The page rules: HTML5, a landmark, a real form, strict CSP, no framing, no caching. */
function expectPage(res: Awaited<ReturnType<typeof get>>, status = 200) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body.startsWith('<!DOCTYPE html>\n<html lang="en">')).toBe(true);
  expect(res.body).toMatch(/<meta charset="utf-8">/);
  expect(res.body.match(/<main>/g)).toHaveLength(1);
  expect(res.body).toMatch(/<h1>[^<]+<\/h1>/);
  expect(res.body).not.toMatch(/<script/i);
  return res.body;
}
const expectForm = (body: string, button: string) =>
  expect(body).toMatch(new RegExp(`<form method="post">(<input type="hidden"[^>]*>)*<button type="submit">${button}</button></form>`));

describe('unsubscribe page', () => {
  it('GET shows the address and a form to unsubscribe, and changes nothing', async () => {
    const c = await pagesFor(project, { email: 'reader@example.com' });
    const body = expectPage(await get(c.unsubscribe));
    expect(body).toContain('reader@example.com');
    expect(body).toContain('Test project');
    expectForm(body, 'Unsubscribe');
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(true);
    expect(await eventNames(t.db, c.contactId)).toEqual([]);
  });

  it('POST unsubscribes (contact.unsubscribed once) and links to resubscribing', async () => {
    const c = await pagesFor(project);
    const body = expectPage(await postForm(c.unsubscribe));
    expect(body).toMatch(/role="status"/);
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);
    const resubscribe = /<a href="([^"]+)">Subscribe again<\/a>/.exec(body)?.[1] ?? '';
    expect(resubscribe).toBe(`${t.config.publicUrl}${c.subscribe}`);
    expectPage(await postForm(c.unsubscribe));
    expect(await eventNames(t.db, c.contactId)).toEqual(['contact.unsubscribed']);
    // Once unsubscribed, GET shows the state instead of the button.
    expect(expectPage(await get(c.unsubscribe))).toContain('Subscribe again');
  });

  it('answers an RFC 8058 one-click POST with a short 200 and unsubscribes', async () => {
    const c = await pagesFor(project);
    const res = await postForm(c.unsubscribe, 'List-Unsubscribe=One-Click');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('Unsubscribed\n');
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);
    expect(await eventNames(t.db, c.contactId)).toEqual(['contact.unsubscribed']);
  });

  it('takes a one-click POST sent as multipart/form-data', async () => {
    const c = await pagesFor(project);
    const boundary = 'xYzZY';
    const payload = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
    const res = await t.app.inject({ method: 'POST', url: c.unsubscribe, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('Unsubscribed\n');
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);
  });

  it('unsubscribes from a project that is disabled', async () => {
    const own = await newProject(t.app);
    const c = await pagesFor(own.project);
    await t.db.db.updateTable('projects').set({ disabled: true }).where('id', '=', own.project.id).execute();
    expectPage(await postForm(c.unsubscribe));
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);
  });
});

describe('subscribe page', () => {
  it('GET offers to subscribe an unsubscribed contact; POST subscribes (contact.subscribed)', async () => {
    const c = await pagesFor(project, { subscribed: false });
    const body = expectPage(await get(c.subscribe));
    expectForm(body, 'Subscribe');
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);
    const done = expectPage(await postForm(c.subscribe));
    expect(done).toContain('You are subscribed');
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(true);
    expect(await eventNames(t.db, c.contactId)).toEqual(['contact.subscribed']);
  });

  it('round-trips: unsubscribe, then the resubscribe link', async () => {
    const c = await pagesFor(project);
    await postForm(c.unsubscribe);
    await postForm(c.subscribe);
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(true);
    expect(await eventNames(t.db, c.contactId)).toEqual(['contact.unsubscribed', 'contact.subscribed']);
  });
});

describe('manage page', () => {
  it('shows the state with the button that changes it, and changes it', async () => {
    const c = await pagesFor(project);
    const page = expectPage(await get(c.manage));
    expect(page).toContain('<strong>subscribed</strong>');
    expectForm(page, 'Unsubscribe');
    expect(page).toContain('name="action" value="unsubscribe"');

    const after = expectPage(await postForm(c.manage, 'action=unsubscribe'));
    expect(after).toContain('You are unsubscribed.');
    expect(after).toContain('<strong>unsubscribed</strong>');
    expectForm(after, 'Subscribe');
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);

    expectPage(await postForm(c.manage, 'action=subscribe'));
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(true);
    expect(await eventNames(t.db, c.contactId)).toEqual(['contact.unsubscribed', 'contact.subscribed']);
  });

  it('answers 400 with the page when the action is missing or unknown', async () => {
    const c = await pagesFor(project);
    expect(expectPage(await postForm(c.manage, 'action=delete'), 400)).toContain('Choose Subscribe or Unsubscribe.');
    expectPage(await postForm(c.manage), 400);
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(true);
  });
});

describe('escaping', () => {
  it('escapes the contact email and project name on every page', async () => {
    const user = await signUp(t.app);
    const evil = await createProject(t.app, user, '<img src=x onerror=alert(2)>');
    const c = await pagesFor(evil, { email: `"<script>alert(1)</script>"@example.com` });
    for (const res of [await get(c.unsubscribe), await get(c.manage), await postForm(c.unsubscribe), await get(c.subscribe), await postForm(c.subscribe)]) {
      const body = expectPage(res);
      expect(body).not.toContain('<script>alert(1)');
      expect(body).not.toContain('<img src=x');
      expect(body).toContain('&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;@example.com');
      expect(body).toContain('&lt;img src=x onerror=alert(2)&gt;');
    }
  });
});

describe('invalid links', () => {
  it('answers a 404 page to garbage, tampered and other-purpose tokens on every page', async () => {
    const c = await pagesFor(project);
    const token = (path: string) => path.split('/')[2] ?? '';
    const tampered = (tok: string) => `${tok.slice(0, 5)}${tok[5] === 'A' ? 'B' : 'A'}${tok.slice(6)}`;
    const cases: [string, string][] = [
      ['/unsubscribe', 'garbage'],
      ['/unsubscribe', tampered(token(c.unsubscribe))],
      ['/unsubscribe', token(c.manage)],
      ['/subscribe', token(c.unsubscribe)],
      ['/manage', token(c.subscribe)],
      ['/manage', `${token(c.manage)}x`],
    ];
    for (const [base, tok] of cases) {
      for (const method of ['GET', 'POST'] as const) {
        const res = method === 'GET' ? await get(`${base}/${tok}`) : await postForm(`${base}/${tok}`, 'List-Unsubscribe=One-Click&action=unsubscribe');
        expect(expectPage(res, 404)).toContain('This link is not valid');
      }
    }
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(true);
  });

  it('answers 404 once the contact is deleted', async () => {
    const c = await pagesFor(project);
    await t.db.db.deleteFrom('contacts').where('id', '=', c.contactId).execute();
    expectPage(await get(c.unsubscribe), 404);
  });

  it('still works once the email of the link is deleted', async () => {
    const c = await pagesFor(project);
    await t.db.db.deleteFrom('emails').where('id', '=', c.emailId).execute();
    expectPage(await postForm(c.unsubscribe));
    expect((await contactRow(t.db, c.contactId)).subscribed).toBe(false);
  });
});

describe('cross-project safety', () => {
  it('refuses a token whose project, contact and email do not belong together', async () => {
    const a = await pagesFor(project);
    const other = await newProject(t.app);
    const b = await pagesFor(other.project);
    const sign = (data: Record<string, unknown>) => `/unsubscribe/${t.deps.tokens.sign(TokenPurpose.unsubscribe, data)}`;
    const mismatched = [
      { p: other.project.id, c: a.contactId, e: a.emailId }, // A's contact under B's project
      { p: project.id, c: a.contactId, e: b.emailId }, // B's email with A's contact
      { p: other.project.id, c: b.contactId, e: a.emailId }, // A's email with B's contact
      { p: project.id, c: randomUUID(), e: a.emailId },
      { p: project.id, c: 'not-a-uuid', e: a.emailId },
      { c: a.contactId, e: a.emailId },
    ];
    for (const data of mismatched) {
      expectPage(await postForm(sign(data)), 404);
    }
    // Same project and contact, but an email of another contact of the same project.
    const sibling = await pagesFor(project);
    expectPage(await postForm(sign({ p: project.id, c: a.contactId, e: sibling.emailId })), 404);
    for (const id of [a.contactId, b.contactId, sibling.contactId]) expect((await contactRow(t.db, id)).subscribed).toBe(true);
    const events = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE contact_id IN (${a.contactId}, ${b.contactId})`.execute(t.db.db);
    expect(events.rows[0]?.n).toBe(0);
  });
});

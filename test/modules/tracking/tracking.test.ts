import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareForDelivery, TokenPurpose } from '../../../src/mail/compliance.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { emailRow, eventNames, seedContact, seedEmail } from './fixtures.js';

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const openUrl = (emailId: string) => `/t/o/${t.deps.tokens.sign(TokenPurpose.open, { e: emailId })}`;
const clickUrl = (emailId: string, u: string) => `/t/c/${t.deps.tokens.sign(TokenPurpose.click, { e: emailId, u })}`;
const get = (url: string) => t.app.inject({ method: 'GET', url });

async function sentEmail(status: 'SENT' | 'BOUNCED' | 'FAILED' = 'SENT') {
  const contactId = await seedContact(t.db, project.id);
  const email = await seedEmail(t.db, project.id, { contactId, status });
  return { contactId, emailId: email.id };
}

/** A token whose payload was changed but whose MAC was kept. */
function withPayload(token: string, data: Record<string, unknown>): string {
  const mac = token.split('.')[1];
  return `${Buffer.from(JSON.stringify(data)).toString('base64url')}.${mac}`;
}

describe('GET /t/o/:token (open pixel)', () => {
  it('answers a 1×1 GIF that is never cached', async () => {
    const { emailId } = await sentEmail();
    const res = await get(openUrl(emailId));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/gif');
    expect(res.rawPayload.equals(GIF)).toBe(true);
    expect(res.headers['cache-control']).toMatch(/no-store/);
    expect(res.headers['cache-control']).toMatch(/no-cache/);
    expect(res.headers.pragma).toBe('no-cache');
  });

  it('records the first open once (opened_at, email.open) and counts every open', async () => {
    const { contactId, emailId } = await sentEmail();
    expect((await get(openUrl(emailId))).statusCode).toBe(200);
    const first = await emailRow(t.db, emailId);
    expect(first).toMatchObject({ status: 'OPENED', open_count: 1 });
    expect(first.opened_at).toBeInstanceOf(Date);
    expect((await get(openUrl(emailId))).statusCode).toBe(200);
    const second = await emailRow(t.db, emailId);
    expect(second.open_count).toBe(2);
    expect(second.opened_at).toEqual(first.opened_at);
    expect(await eventNames(t.db, contactId)).toEqual(['email.open']);
    const event = await t.db.db.selectFrom('events').select(['data', 'project_id']).where('contact_id', '=', contactId).executeTakeFirstOrThrow();
    expect(event).toEqual({ data: { emailId }, project_id: project.id });
  });

  it('answers 404 to a tampered, foreign-purpose or garbage token and records nothing', async () => {
    const { emailId } = await sentEmail();
    const other = await sentEmail();
    const token = t.deps.tokens.sign(TokenPurpose.open, { e: emailId });
    const tampered = withPayload(token, { e: other.emailId });
    const clickToken = t.deps.tokens.sign(TokenPurpose.click, { e: emailId, u: 'https://example.com/' });
    for (const bad of [tampered, `${token}x`, clickToken, 'garbage', `${token}.${token}`, `${token}/x`]) {
      const res = await get(`/t/o/${bad}`);
      expect(res.statusCode, bad).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
    }
    expect((await emailRow(t.db, emailId)).open_count).toBe(0);
    expect((await emailRow(t.db, other.emailId)).open_count).toBe(0);
  });

  it('still answers the GIF for a deleted email (valid token) and records nothing', async () => {
    const res = await get(openUrl(randomUUID()));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/gif');
  });

  it('does not count a HEAD request as an open', async () => {
    const { emailId } = await sentEmail();
    const res = await t.app.inject({ method: 'HEAD', url: openUrl(emailId) });
    expect(res.statusCode).toBe(200);
    expect((await emailRow(t.db, emailId)).open_count).toBe(0);
  });

  it('never downgrades: an open after a bounce keeps BOUNCED', async () => {
    const { emailId } = await sentEmail('BOUNCED');
    await get(openUrl(emailId));
    expect(await emailRow(t.db, emailId)).toMatchObject({ status: 'BOUNCED', open_count: 1 });
  });
});

describe('GET /t/c/:token (click redirect)', () => {
  const target = 'https://shop.example.com/item?id=7&ref=mail#top';

  it('redirects with 302 to exactly the signed URL', async () => {
    const { emailId } = await sentEmail();
    const res = await get(clickUrl(emailId, target));
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(target);
    expect(res.headers['cache-control']).toMatch(/no-store/);
  });

  it('records the click once with an implied open, and counts every click but not as opens', async () => {
    const { contactId, emailId } = await sentEmail();
    await get(clickUrl(emailId, target));
    const first = await emailRow(t.db, emailId);
    expect(first).toMatchObject({ status: 'CLICKED', click_count: 1, open_count: 1 });
    expect(first.clicked_at).toBeInstanceOf(Date);
    expect(first.opened_at).toBeInstanceOf(Date);
    await get(clickUrl(emailId, 'https://other.example.com/'));
    expect(await emailRow(t.db, emailId)).toMatchObject({ status: 'CLICKED', click_count: 2, open_count: 1 });
    expect(await eventNames(t.db, contactId)).toEqual(['email.click', 'email.open']);
    const click = await t.db.db.selectFrom('events').select('data').where('contact_id', '=', contactId).where('name', '=', 'email.click').executeTakeFirstOrThrow();
    expect(click.data).toEqual({ emailId, url: target });
  });

  it('keeps the open count of an email opened before the click', async () => {
    const { contactId, emailId } = await sentEmail();
    await get(openUrl(emailId));
    await get(clickUrl(emailId, target));
    expect(await emailRow(t.db, emailId)).toMatchObject({ status: 'CLICKED', click_count: 1, open_count: 1 });
    expect(await eventNames(t.db, contactId)).toEqual(['email.open', 'email.click']);
  });

  it('records one implied open when clicks race', async () => {
    const { contactId, emailId } = await sentEmail();
    const results = await Promise.all(Array.from({ length: 5 }, () => get(clickUrl(emailId, target))));
    expect(results.map((r) => r.statusCode)).toEqual([302, 302, 302, 302, 302]);
    expect(await emailRow(t.db, emailId)).toMatchObject({ click_count: 5, open_count: 1 });
    expect(await eventNames(t.db, contactId)).toEqual(['email.click', 'email.open']);
  });

  it('never redirects on a tampered token: changed URL, broken MAC, another purpose → 404', async () => {
    const { emailId } = await sentEmail();
    const token = t.deps.tokens.sign(TokenPurpose.click, { e: emailId, u: target });
    const changedUrl = withPayload(token, { e: emailId, u: 'https://evil.example.net/' });
    const brokenMac = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    const openToken = t.deps.tokens.sign(TokenPurpose.open, { e: emailId, u: target });
    const unsubscribeToken = t.deps.tokens.sign(TokenPurpose.unsubscribe, { e: emailId, u: target });
    for (const bad of [changedUrl, brokenMac, openToken, unsubscribeToken, 'nonsense', `${token}/extra`]) {
      const res = await get(`/t/c/${bad}`);
      expect(res.statusCode, bad).toBe(404);
      expect(res.headers.location).toBeUndefined();
    }
    expect((await emailRow(t.db, emailId)).click_count).toBe(0);
  });

  it('refuses signed targets that are not http(s) URLs', async () => {
    const { emailId } = await sentEmail();
    for (const u of ['javascript:alert(1)', 'data:text/html,hi', 'mailto:a@example.com', '/relative', 'not a url']) {
      const res = await get(clickUrl(emailId, u));
      expect(res.statusCode, u).toBe(404);
      expect(res.headers.location).toBeUndefined();
    }
  });

  it('still redirects a valid token of a deleted email, and of an email that is not trackable (FAILED)', async () => {
    expect((await get(clickUrl(randomUUID(), target))).headers.location).toBe(target);
    const { emailId } = await sentEmail('FAILED');
    const res = await get(clickUrl(emailId, target));
    expect(res.statusCode).toBe(302);
    expect(await emailRow(t.db, emailId)).toMatchObject({ status: 'FAILED', click_count: 0 });
  });

  it('answers a redirect target with characters a header cannot carry in its encoded form', async () => {
    const { emailId } = await sentEmail();
    const res = await get(clickUrl(emailId, 'https://example.com/café?q=ü ö'));
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('https://example.com/caf%C3%A9?q=%C3%BC%20%C3%B6');
  });

  it('follows the links prepareForDelivery writes into an email', async () => {
    const contactId = await seedContact(t.db, project.id);
    const { id: emailId } = await seedEmail(t.db, project.id, { contactId });
    const { html } = prepareForDelivery(
      `<html><body><a href="https://example.com/a?x=1&amp;y=2">A</a></body></html>`,
      { emailId, projectId: project.id, contactId, type: 'MARKETING', tracking: 'ENABLED' },
      { tokens: t.deps.tokens, publicUrl: t.config.publicUrl },
    );
    const [link, pixel] = [...html.matchAll(/(?:href|src)="([^"]+)"/g)]
      .map((m) => m[1] ?? '')
      .filter((u) => u.includes('/t/'));
    const click = await get(String(link).replace(t.config.publicUrl, ''));
    expect(click.headers.location).toBe('https://example.com/a?x=1&y=2');
    const open = await get(String(pixel).replace(t.config.publicUrl, ''));
    expect(open.headers['content-type']).toBe('image/gif');
    expect(await emailRow(t.db, emailId)).toMatchObject({ status: 'CLICKED', open_count: 2, click_count: 1 });
  });

  it('declares every tracking and page route public', () => {
    const ours = t.app.routeCatalog.filter((r) => /^\/(t\/[oc]|unsubscribe|subscribe|manage)\//.test(r.url));
    expect(ours.map((r) => `${r.method} ${r.url}`).sort()).toEqual(
      [
        'GET /manage/*',
        'GET /subscribe/*',
        'GET /t/c/*',
        'GET /t/o/*',
        'GET /unsubscribe/*',
        'POST /manage/*',
        'POST /subscribe/*',
        'POST /unsubscribe/*',
      ].sort(),
    );
    expect(ours.every((r) => r.auth === 'none')).toBe(true);
  });
});

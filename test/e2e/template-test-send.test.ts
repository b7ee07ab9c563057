import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { type E2E, seriousA11yViolations, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

/** A signed-up owner's project with a verified sender domain (staged in the server's database) and its secret key as `call`. */
async function setUpProject(page: Page, domainName: string) {
  const owner = `owner-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@example.com`;
  const projectId = await signUpAndCreateProject(page, owner, 'Test sends');
  const projects = (await (await page.request.get('/users/@me/projects')).json()) as { id: string; secret: string }[];
  const secret = projects.find((p) => p.id === projectId)?.secret ?? '';
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${e.base}${path}`, { method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json: unknown = res.status === 204 ? undefined : await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json as T;
  };
  const domain = await call<{ id: string }>('POST', '/domains', { domain: domainName });
  const db = connect(e.databaseUrl, { max: 1 });
  try {
    await sql`UPDATE domains SET verified = true, verified_at = now() WHERE id = ${domain.id}::uuid`.execute(db.db);
    await sql`UPDATE users SET email_verified_at = now() WHERE email = ${owner}`.execute(db.db);
  } finally {
    await db.close();
  }
  return { projectId, owner, call };
}

/** The one message the sink received for `address`, parsed, once it arrived. */
async function mailTo(address: string) {
  await expect.poll(() => e.sink.messagesTo(address).length, { timeout: 20_000 }).toBe(1);
  return simpleParser(e.sink.messagesTo(address)[0]?.raw ?? Buffer.alloc(0));
}

describe('dashboard: template test sends and a contact’s emails', () => {
  it('sends a test from the template editor (saving first, rendered as the preview’s contact), then shows the contact’s emails with their status', async () => {
    const { context, page } = await e.newPage();
    try {
      const { projectId, owner, call } = await setUpProject(page, 'tests.example');
      const ann = await call<{ id: string }>('POST', '/contacts', { email: 'ann@example.org', data: { firstName: 'Ann', plan: 'Pro' } });
      const template = await call<{ id: string }>('POST', '/templates', {
        name: 'Welcome',
        subject: 'Welcome {{firstName ?? "friend"}}',
        body: '<p id="greeting">Hello {{firstName ?? "friend"}}, plan {{plan ?? "none"}}</p>',
        from: 'hello@tests.example',
        type: 'TRANSACTIONAL',
      });

      await page.goto(`/app/projects/${projectId}/templates/${template.id}`);
      const preview = page.frameLocator('iframe[title="Email preview"]');
      await expect.poll(() => preview.locator('#greeting').textContent()).toBe('Hello Ann, plan Pro');

      // An unsaved edit: the dialog says the saved version is what a plain send carries, and offers to save first.
      await page.getByLabel('Subject').fill('Hi {{firstName ?? "friend"}}, your {{plan}} plan');
      await page.getByRole('button', { name: 'Send test' }).click();
      const dialog = page.getByRole('dialog', { name: 'Send a test email' });
      await dialog.getByText('You have unsaved changes.').waitFor();
      await expect.poll(() => dialog.getByLabel('Send to').inputValue()).toBe(owner);
      expect(await dialog.getByLabel(/Fill variables with the data of ann@example.org/).isChecked()).toBe(true);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await dialog.getByRole('button', { name: 'Save and send test' }).click();
      await page.getByText(`Test email sent to ${owner}`).first().waitFor();
      await dialog.waitFor({ state: 'hidden' });
      expect((await call<{ subject: string }>('GET', `/templates/${template.id}`)).subject).toBe('Hi {{firstName ?? "friend"}}, your {{plan}} plan');
      await page.getByText('Unsaved changes').waitFor({ state: 'hidden' });
      const test = await mailTo(owner);
      expect(test.subject).toBe('Hi Ann, your Pro plan');
      expect(test.html).toContain('Hello Ann, plan Pro');

      // A bad address is answered beside the field; then a test to Ann herself, with her own data.
      await page.getByRole('button', { name: 'Send test' }).click();
      await dialog.getByText('You have unsaved changes.').waitFor({ state: 'detached' });
      await dialog.getByLabel('Send to').fill('not-an-address');
      await dialog.getByLabel(/Fill variables with the data of/).uncheck();
      await dialog.getByRole('button', { name: 'Send test' }).click();
      await dialog.getByRole('alert').filter({ hasText: /email/i }).waitFor();
      // Ann's relay stalls (the email stays SENDING) until released below, while her page is open.
      e.sink.hold('ann@example.org', 'rcpt');
      await dialog.getByLabel('Send to').fill('ann@example.org');
      await dialog.getByRole('button', { name: 'Send test' }).click();
      await page.getByText('Test email sent to ann@example.org').first().waitFor();

      // A campaign email and 21 more from the API: Ann's page lists them newest first, 20 at a time.
      const campaign = await call<{ data: { id: string } }>('POST', '/campaigns', { name: 'Spring sale', subject: 'Spring', body: '<p>x</p>', from: 'hello@tests.example' });
      const db = connect(e.databaseUrl, { max: 1 });
      try {
        await sql`
          INSERT INTO emails (project_id, contact_id, source, type, campaign_id, to_email, from_email, subject, html, message_id, status, sent_at, bounced_at, created_at)
          VALUES (${projectId}, ${ann.id}, 'CAMPAIGN', 'MARKETING', ${campaign.data.id}, 'ann@example.org', 'hello@tests.example', 'Spring', '<p>x</p>',
                  '<spring@tests.example>', 'BOUNCED', now() - interval '2 days', now() - interval '2 days', now() - interval '2 days')`.execute(db.db);
        await sql`
          INSERT INTO emails (project_id, contact_id, source, type, to_email, from_email, subject, html, message_id, status, sent_at, delivered_at, created_at)
          SELECT ${projectId}, ${ann.id}, 'SEND', 'TRANSACTIONAL', 'ann@example.org', 'hello@tests.example', 'Receipt ' || i, '<p>x</p>',
                 '<r' || i || '@tests.example>', 'DELIVERED', now() - (i || ' days')::interval - interval '3 days', now() - (i || ' days')::interval - interval '3 days', now() - (i || ' days')::interval - interval '3 days'
          FROM generate_series(1, 21) AS i`.execute(db.db);
      } finally {
        await db.close();
      }

      await page.goto(`/app/projects/${projectId}/contacts/${ann.id}`);
      const emails = page.getByRole('list', { name: 'Emails' });
      const rows = emails.getByRole('listitem');
      await expect.poll(() => rows.count()).toBe(20);
      await page.getByText('23 in all').waitFor();
      // The newest: the test send to Ann, on its way, marked as a test, linked to its template; the
      // list polls while it is, and shows it Sent once the relay takes it.
      const newest = rows.first();
      await expect.poll(() => newest.textContent(), { timeout: 20_000 }).toContain('Sending');
      await expect.poll(() => e.sink.held().rcpt.length, { timeout: 20_000 }).toBe(1);
      e.sink.release();
      await expect.poll(() => newest.textContent(), { timeout: 20_000 }).toContain('Sent');
      expect((await mailTo('ann@example.org')).subject).toBe('Hi Ann, your Pro plan');
      expect(await newest.textContent()).toContain('Hi Ann, your Pro plan');
      expect(await newest.textContent()).toContain('Test');
      await newest.getByRole('link', { name: 'Template “Welcome”' }).waitFor();
      expect(await rows.nth(1).textContent()).toContain('Bounced');
      expect(await rows.nth(2).textContent()).toMatch(/Delivered.*Receipt 1/);
      await page.getByRole('button', { name: 'Show older' }).click();
      await expect.poll(() => rows.count()).toBe(23);
      await page.getByRole('button', { name: 'Show older' }).waitFor({ state: 'detached' });
      expect(await rows.last().textContent()).toContain('Receipt 21');
      expect(await seriousA11yViolations(page)).toEqual([]);
      await rows.first().scrollIntoViewIfNeeded();
      await e.screenshot(page, 'contact-emails');

      // The campaign's row links to the campaign's page.
      await rows.nth(1).getByRole('link', { name: 'Campaign “Spring sale”' }).click();
      await page.waitForURL(new RegExp(`/campaigns/${campaign.data.id}$`));
    } finally {
      await context.close();
    }
  });
});

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { sql } from 'kysely';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { type E2E, signUpAndCreateProject, startE2E } from './harness.js';

/**
 * Inbound mail in a real browser against the real server with its inbound SMTP receiver on:
 * the domain page's "Receive mail" toggle, then a message over SMTP, shown in the activity feed.
 */

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

let e: E2E;
let smtpPort: number;
beforeAll(async () => {
  smtpPort = await freePort();
  e = await startE2E({ BOUNCE_DOMAIN: 'bounces.test', INBOUND_SMTP_PORT: String(smtpPort), INBOUND_SMTP_HOST: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  await e?.close();
});

async function smtp(to: string, from: string, subject: string): Promise<{ ok: boolean; code?: number }> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
  try {
    await transport.sendMail({ envelope: { from, to: [to] }, from, to, subject, text: 'Hello there' });
    return { ok: true };
  } catch (err) {
    return { ok: false, code: (err as { responseCode?: number }).responseCode };
  } finally {
    transport.close();
  }
}

describe('dashboard: receiving mail at a domain', () => {
  it('the Receive mail toggle turns inbound on; a message is then accepted and listed in the activity feed', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `owner-${randomUUID()}@example.com`, 'Inbox');
      const projects = (await (await page.request.get('/users/@me/projects')).json()) as { id: string; secret: string }[];
      const secret = projects.find((p) => p.id === projectId)?.secret ?? '';
      const domain = `in-${randomUUID().slice(0, 8)}.example`;
      const res = await fetch(`${e.base}/domains`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ domain }) });
      expect(res.status).toBe(201);
      const db = connect(e.databaseUrl, { max: 1 });
      try {
        await sql`UPDATE domains SET verified = true, verified_at = now() WHERE domain = ${domain}`.execute(db.db);
      } finally {
        await db.close();
      }
      const from = `pat-${randomUUID().slice(0, 8)}@people.example`;
      // Off by default: refused.
      expect(await smtp(`hello@${domain}`, from, 'Too early')).toEqual({ ok: false, code: 550 });

      await page.goto(`/app/projects/${projectId}/domains`);
      const card = page.getByRole('region', { name: domain });
      const toggle = card.getByRole('checkbox', { name: 'Receive mail' });
      expect(await toggle.isChecked()).toBe(false);
      // Controlled by the server's answer: checked once PATCH /domains/:id has answered.
      await toggle.click();
      // The toast's text (exact: its screen-reader announcement says "Notification …" too).
      await page.getByText(`Mail to ${domain} is received`, { exact: true }).waitFor();
      expect(await toggle.isChecked()).toBe(true);
      await page.reload();
      expect(await page.getByRole('region', { name: domain }).getByRole('checkbox', { name: 'Receive mail' }).isChecked()).toBe(true);

      expect(await smtp(`hello@${domain}`, from, 'Where is my parcel?')).toEqual({ ok: true });
      await page.goto(`/app/projects/${projectId}/activity?types=email.received`);
      const list = page.getByRole('list', { name: 'Activity', exact: true });
      await expect.poll(() => list.locator('li[data-activity-type="email.received"]').count()).toBe(1);
      expect(await list.textContent()).toContain(from);
      await e.screenshot(page, 'activity-email-received');

      // Off again: refused again.
      await page.goto(`/app/projects/${projectId}/domains`);
      await page.getByRole('region', { name: domain }).getByRole('checkbox', { name: 'Receive mail' }).click();
      await page.getByText(`Mail to ${domain} is no longer received`, { exact: true }).waitFor();
      expect(await smtp(`hello@${domain}`, from, 'Too late')).toEqual({ ok: false, code: 550 });
    } finally {
      await context.close();
    }
  }, 120_000);
});

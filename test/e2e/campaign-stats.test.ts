import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { type E2E, signUpAndCreateProject, startE2E } from './harness.js';

/**
 * The campaign page's insight in a real browser against the real server: a campaign sent through
 * the SMTP sink, its tracked links opened and clicked from the captured mail, one recipient's
 * address bounced through an SES notification (SNS signature checks off for the test server).
 */

let e: E2E;
beforeAll(async () => {
  e = await startE2E({ SNS_VERIFY: 'false' });
}, 120_000);
afterAll(async () => {
  await e?.close();
});

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36';

/** The tracked URLs of a captured message: its click links in order and its open pixel. */
async function trackedUrls(raw: Buffer): Promise<{ clicks: string[]; pixel: string }> {
  const html = (await simpleParser(raw)).html || '';
  const clicks = [...html.matchAll(/href="([^"]*\/t\/c\/[^"]+)"/g)].map((m) => m[1] ?? '');
  const pixel = /src="([^"]*\/t\/o\/[^"]+)"/.exec(html)?.[1] ?? '';
  return { clicks, pixel };
}

async function hit(url: string): Promise<Response> {
  const res = await fetch(url, { redirect: 'manual', headers: { 'user-agent': CHROME } });
  expect([200, 302]).toContain(res.status);
  return res;
}

describe('dashboard: a campaign\'s opens and clicks over time, top links and bounces', () => {
  it('shows the chart, the links table with every click and a bounce linked to its contact', async () => {
    const { context, page } = await e.newPage();
    try {
      const owner = `owner-${randomUUID()}@example.com`;
      const projectId = await signUpAndCreateProject(page, owner, 'Insight');
      const projects = (await (await page.request.get('/users/@me/projects')).json()) as { id: string; secret: string }[];
      const secret = projects.find((p) => p.id === projectId)?.secret ?? '';
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${e.base}${path}`, { method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        const json = res.status === 204 ? undefined : await res.json();
        if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
        return json as Record<string, unknown>;
      };
      // A verified sender (as the operator CLI's verify-domain does; no DNS in the test).
      const domain = (await call('POST', '/domains', { domain: 'insight.example' })) as { id: string };
      const db = connect(e.databaseUrl, { max: 1 });
      try {
        await sql`UPDATE domains SET verified = true, verified_at = now() WHERE id = ${domain.id}::uuid`.execute(db.db);
        await sql`UPDATE users SET email_verified_at = now() WHERE email = ${owner} AND email_verified_at IS NULL`.execute(db.db);
      } finally {
        await db.close();
      }
      // Ann, Bob, Cat, and 20 more whose addresses bounce too (21 bounces: two pages of the table).
      const people = ['ann', 'bob', 'cat', ...Array.from({ length: 20 }, (_, i) => `gone${i}`)].map((n) => `${n}-${randomUUID().slice(0, 8)}@example.org`);
      const contactIds: string[] = [];
      for (const email of people) contactIds.push(((await call('POST', '/contacts', { email })) as { id: string }).id);

      const created = (await call('POST', '/campaigns', {
        name: 'Spring sale',
        subject: 'Spring sale',
        from: 'news@insight.example',
        body: '<p>Hello</p><p><a href="https://shop.example/sale">See the sale</a> or <a href="https://shop.example/help">get help</a></p>',
      })) as { data: { id: string } };
      const campaignId = created.data.id;
      await call('POST', `/campaigns/${campaignId}/send`, {});
      await e.sink.waitForMessages(people.length, 30_000);
      await expect.poll(async () => ((await call('GET', `/campaigns/${campaignId}`)) as { status: string }).status, { timeout: 30_000 }).toBe('SENT');

      const [ann, bob, cat, ...gone] = await Promise.all(people.map(async (p) => {
        const m = e.sink.messagesTo(p)[0];
        if (!m) throw new Error(`no mail to ${p}`);
        return { ...(await trackedUrls(m.raw)), messageId: m.messageId ?? '' };
      }));
      if (!ann || !bob || !cat) throw new Error('mail missing');
      expect(ann.clicks).toHaveLength(2);
      // Ann opens and clicks the sale twice and help once; Bob clicks the sale; Cat's address bounces.
      await hit(ann.pixel);
      const sale = await hit(ann.clicks[0] ?? '');
      expect(sale.headers.get('location')).toBe('https://shop.example/sale');
      await hit(ann.clicks[0] ?? '');
      await hit(ann.clicks[1] ?? '');
      await hit(bob.clicks[0] ?? '');
      const bounce = async (to: string, messageId: string) => {
        const now = new Date().toISOString();
        const res = await fetch(`${e.base}/webhooks/notifications`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
          body: JSON.stringify({
            Type: 'Notification',
            MessageId: randomUUID(),
            TopicArn: 'arn:aws:sns:us-east-1:123456789012:ses-notifications',
            Timestamp: now,
            Message: JSON.stringify({
              notificationType: 'Bounce',
              mail: { timestamp: now, source: 'news@insight.example', messageId, destination: [to] },
              bounce: { bounceType: 'Permanent', bounceSubType: 'General', timestamp: now, feedbackId: `fb-${randomUUID()}`, bouncedRecipients: [{ emailAddress: to, diagnosticCode: 'smtp; 550 5.1.1 user unknown' }] },
            }),
          }),
        });
        expect(res.status).toBe(200);
      };
      // Cat's first: the oldest bounce, on the second page (newest first).
      await bounce(people[2] ?? '', cat.messageId);
      for (const [i, g] of gone.entries()) await bounce(people[3 + i] ?? '', g.messageId);

      await page.goto(`/app/projects/${projectId}/campaigns/${campaignId}`);
      await page.getByRole('heading', { name: 'Opens and clicks over time' }).waitFor();
      const chart = page.getByTestId('campaign-chart');
      await chart.waitFor();
      // Totals: two emails opened (Ann's pixel, Bob's click), two clicked, none delivered (no delivery notification).
      expect(await chart.getByTestId('total-opened').textContent()).toBe('2');
      expect(await chart.getByTestId('total-clicked').textContent()).toBe('2');
      expect(await chart.getByTestId('total-delivered').textContent()).toBe('0');
      expect(await chart.locator('.recharts-line').count()).toBe(3);

      const links = page.getByRole('table', { name: 'Top links' });
      await links.getByText('https://shop.example/sale').waitFor();
      const rows = links.getByTestId('link-row');
      await expect.poll(() => rows.count()).toBe(2);
      expect((await rows.nth(0).locator('td').allTextContents()).map((s) => s.trim())).toEqual(['https://shop.example/sale', '3', '2', '100.0 %']);
      expect((await rows.nth(1).locator('td').allTextContents()).map((s) => s.trim())).toEqual(['https://shop.example/help', '1', '1', '50.0 %']);
      await page.getByText('2 recipients clicked').waitFor();

      const bounces = page.getByRole('table', { name: 'Bounces' });
      const row = bounces.getByTestId('bounce-row');
      await expect.poll(() => row.count()).toBe(20);
      await page.getByText('21 in all').waitFor();
      await row.first().getByText('Hard bounce (General)').waitFor();
      await page.getByRole('button', { name: 'Next' }).click();
      await expect.poll(() => row.count()).toBe(1);
      await page.getByText('21 in all').waitFor();
      await row.getByText('smtp; 550 5.1.1 user unknown').waitFor();
      const contactLink = row.getByRole('link', { name: people[2] });
      expect(await contactLink.getAttribute('href')).toBe(`/app/projects/${projectId}/contacts/${contactIds[2]}`);
      expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
      await page.evaluate(() => window.scrollTo(0, 0));
      await e.screenshot(page, 'campaign-insight');
      await links.scrollIntoViewIfNeeded();
      await e.screenshot(page, 'campaign-insight-tables');
      await page.getByRole('button', { name: 'Previous' }).click();
      await expect.poll(() => row.count()).toBe(20);
      await page.getByRole('button', { name: 'Next' }).click();
      await expect.poll(() => row.count()).toBe(1);
      await contactLink.click();
      await page.waitForURL(new RegExp(`/contacts/${contactIds[2]}$`));
    } finally {
      await context.close();
    }
  }, 120_000);
});

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/process.js';
import { type E2E, seriousA11yViolations, sidebarLink, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

interface Keys {
  public: string;
  secret: string;
}

/** The project's keys, read with the page's session (GET /users/@me/projects). */
async function keysOf(page: Page, projectId: string): Promise<Keys> {
  const res = await page.context().request.get(`${e.base}/users/@me/projects`);
  expect(res.status()).toBe(200);
  const projects = (await res.json()) as { id: string; public: string; secret: string | null }[];
  const project = projects.find((p) => p.id === projectId);
  if (!project?.secret) throw new Error('no keys for the project');
  return { public: project.public, secret: project.secret };
}

async function call(key: string, method: string, path: string, body: unknown): Promise<Response> {
  const res = await fetch(`${e.base}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

const text = async (page: Page, selector: string) => (await page.locator(selector).first().textContent()) ?? '';

describe('dashboard: Home, Activity and Analytics', () => {
  it('shows an empty checklist on a new project, then the activity of API calls on Home, Activity (filtered by type in the URL) and Analytics', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `insight-${Date.now()}@example.com`, 'Insight');

      // Home of a new project: nothing done, each step links to the page that does it.
      await page.getByText('Get set up').waitFor();
      expect(await text(page, '[data-testid="setup-progress"]')).toBe('0 of 4 done');
      for (const [step, path] of [
        ['domain', 'domains'],
        ['contacts', 'contacts'],
        ['template', 'templates'],
        ['send', 'campaigns'],
      ] as const) {
        const item = page.locator(`[data-step="${step}"]`);
        expect(await item.getAttribute('data-done')).toBe('false');
        expect(await item.getByRole('link').getAttribute('href')).toBe(`/app/projects/${projectId}/${path}`);
      }
      await page.getByText('Nothing has happened yet').waitFor();
      expect(await text(page, '[data-testid="recent-count"]')).toContain('0 in the last hour');
      await page.locator('[data-stat="Emails sent"]').waitFor();
      expect(await text(page, '[data-stat="Emails sent"]')).toBe('0');

      // Contacts with the secret key, events with the public one.
      const keys = await keysOf(page, projectId);
      await call(keys.secret, 'POST', '/contacts', { email: 'ada@example.com', data: { plan: 'pro' } });
      await call(keys.secret, 'POST', '/contacts', { email: 'grace@example.com' });
      await call(keys.public, 'POST', '/v1/track', { email: 'ada@example.com', event: 'signed_up', data: { plan: 'pro' } });
      await call(keys.public, 'POST', '/v1/track', { email: 'ada@example.com', event: 'viewed_pricing' });
      await call(keys.public, 'POST', '/v1/track', { email: 'grace@example.com', event: 'viewed_pricing', subscribed: false });
      const feed = (await (await fetch(`${e.base}/activity`, { headers: { authorization: `Bearer ${keys.secret}` } })).json()) as { total: number; data: { type: string }[] };
      const tracked = feed.data.filter((i) => i.type === 'event.tracked').length;
      expect(tracked).toBe(3);
      // Grace's unsubscription is an item of another type.
      expect(feed.data.map((i) => i.type)).toContain('contact.unsubscribed');

      // The live count picks them up within its 10 s poll (no reload), and the latest activity follows.
      await expect.poll(() => text(page, '[data-testid="recent-count"]'), { timeout: 15_000 }).toContain(`${feed.total} in the last hour`);
      const latest = page.getByRole('list', { name: 'Latest activity' });
      await expect.poll(() => latest.locator('li').count()).toBe(Math.min(feed.total, 10));
      expect(await latest.textContent()).toContain('viewed_pricing');
      expect(await latest.textContent()).toContain('grace@example.com');
      expect(await latest.getByRole('link', { name: 'ada@example.com' }).first().getAttribute('href')).toMatch(new RegExp(`/app/projects/${projectId}/contacts/[0-9a-f-]{36}$`));

      // The checklist after a reload: contacts done.
      await page.reload();
      await expect.poll(() => text(page, '[data-testid="setup-progress"]')).toBe('1 of 4 done');
      expect(await page.locator('[data-step="contacts"]').getAttribute('data-done')).toBe('true');
      await expect.poll(() => text(page, '[data-stat="Events tracked"]')).toBe('3');

      // Activity: everything, then only the tracked events (in the URL), and back again.
      await page.getByRole('link', { name: 'View all activity' }).click();
      await page.waitForURL(/\/activity$/);
      const list = page.getByRole('list', { name: 'Activity', exact: true });
      await expect.poll(() => list.locator('li').count()).toBe(feed.total);
      expect(await list.locator('li[data-activity-type="contact.unsubscribed"]').count()).toBe(1);
      expect(await text(page, '[data-testid="activity-total"]')).toBe(`${feed.total} items`);

      await page.getByRole('button', { name: 'Types' }).click();
      await page.getByRole('menuitemcheckbox', { name: 'Event tracked' }).click();
      await page.keyboard.press('Escape');
      await page.waitForURL((url) => url.searchParams.get('types') === 'event.tracked');
      await expect.poll(() => list.locator('li').count()).toBe(3);
      expect(await list.locator('li[data-activity-type="event.tracked"]').count()).toBe(3);
      expect(await list.textContent()).toContain('signed_up');
      expect(await text(page, '#activity-types-value')).toBe('Event tracked');

      await page.goBack();
      await page.waitForURL((url) => url.pathname.endsWith('/activity') && !url.searchParams.has('types'));
      await expect.poll(() => list.locator('li').count()).toBe(feed.total);
      expect(await text(page, '#activity-types-value')).toBe('All types');
      await page.goForward();
      await expect.poll(() => list.locator('li').count()).toBe(3);

      // From a contact: only that contact's items.
      const ada = (await (await fetch(`${e.base}/contacts?search=ada`, { headers: { authorization: `Bearer ${keys.secret}` } })).json()) as { data: { id: string; email: string }[] };
      const adaId = ada.data.find((c) => c.email === 'ada@example.com')?.id;
      await page.goto(`/app/projects/${projectId}/activity?types=event.tracked&contactId=${adaId}`);
      await expect.poll(() => list.locator('li').count()).toBe(2);
      expect(await list.textContent()).not.toContain('grace@example.com');

      // Analytics: the top events of the default 30 days, then of the last 7 (in the URL).
      await sidebarLink(page, 'Analytics').click();
      await page.waitForURL(/\/analytics$/);
      const events = page.getByRole('table', { name: 'Top events' });
      await events.waitFor();
      const rows = events.locator('tbody tr');
      await expect.poll(() => rows.count()).toBe(2);
      expect((await rows.nth(0).textContent()) ?? '').toMatch(/viewed_pricing2/);
      expect((await rows.nth(1).textContent()) ?? '').toMatch(/signed_up1/);
      expect(await rows.nth(0).textContent()).toContain('new');
      await page.getByRole('button', { name: '7 days' }).click();
      await page.waitForURL((url) => url.searchParams.get('range') === '7');
      await expect.poll(() => page.getByRole('button', { name: '7 days' }).getAttribute('aria-pressed')).toBe('true');
      await expect.poll(() => rows.count()).toBe(2);
      await page.getByText('No email in this range').waitFor();

      // Paging: 25 items a page, the cursor in the URL; Newer and the back button return.
      for (let i = 0; i < 24; i++) await call(keys.public, 'POST', '/v1/track', { email: 'grace@example.com', event: 'scrolled', data: { depth: i } });
      await page.goto(`/app/projects/${projectId}/activity`);
      await expect.poll(() => text(page, '[data-testid="activity-total"]')).toBe(`${feed.total + 24} items`);
      expect(await list.locator('li').count()).toBe(25);
      await page.getByRole('button', { name: 'Older' }).click();
      await page.waitForURL((url) => url.searchParams.has('cursor'));
      await expect.poll(() => list.locator('li').count()).toBe(feed.total + 24 - 25);
      expect(await list.textContent()).toContain('signed_up');
      expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
      await page.getByRole('button', { name: 'Newer' }).click();
      await page.waitForURL((url) => !url.searchParams.has('cursor'));
      await expect.poll(() => list.locator('li').count()).toBe(25);
      expect(await list.textContent()).not.toContain('signed_up');
      await page.goBack();
      await page.waitForURL((url) => url.searchParams.has('cursor'));
      await expect.poll(() => list.locator('li').count()).toBe(feed.total + 24 - 25);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('charts sent, opened and clicked email on Home and Analytics against the previous period (screenshots)', async () => {
    const { context, page } = await e.newPage();
    try {
      const email = `sender-${Date.now()}@example.com`;
      const projectId = await signUpAndCreateProject(page, email, 'Northwind');
      const keys = await keysOf(page, projectId);

      // A project sends once an OWNER's address is verified and its domain is (docs/accounts.md, docs/domains.md).
      // (The instance's first user is verified at sign-up; any other gets the link by email.)
      const me = (await (await page.context().request.get(`${e.base}/users/@me`)).json()) as { emailVerified: boolean };
      if (!me.emailVerified) {
        await expect.poll(() => e.sink.messagesTo(email).length, { timeout: 30_000 }).toBeGreaterThan(0);
        const token = /verify-email\?token=([\w-]+)/.exec(decodeMail(e.sink.messagesTo(email)[0]?.raw))?.[1];
        expect(token).toBeTruthy();
        expect((await page.context().request.post(`${e.base}/auth/verify-email`, { data: { token } })).status()).toBe(200);
      }
      await call(keys.secret, 'POST', '/domains', { domain: 'northwind.example' });
      await verifyDomainByOperator('northwind.example');

      const to = ['ada@example.com', 'grace@example.com', 'linus@example.com', 'ken@example.com'];
      await call(keys.secret, 'POST', '/v1/send', {
        to,
        from: 'hello@northwind.example',
        subject: 'Our spring release',
        // The contacts /v1/send creates join the marketing audience only when asked.
        subscribed: true,
        body: '<p>Hello!</p><p><a href="https://example.com/release">Read the release notes</a></p>',
      });
      await expect.poll(() => to.filter((a) => e.sink.messagesTo(a).length > 0).length, { timeout: 30_000 }).toBe(to.length);
      // A campaign to every contact, sent now, and one scheduled in two days (the upcoming panel).
      const campaign = async (name: string, subject: string) =>
        ((await (await call(keys.secret, 'POST', '/campaigns', { name, subject, from: 'hello@northwind.example', body: `<p>${subject}</p>`, audienceType: 'ALL' })).json()) as { data: { id: string } }).data.id;
      const sent = await campaign('Spring newsletter', 'What is new this spring');
      await call(keys.secret, 'POST', `/campaigns/${sent}/send`, {});
      const campaignNow = async () => {
        const body = (await (await fetch(`${e.base}/campaigns/${sent}`, { headers: { authorization: `Bearer ${keys.secret}` } })).json()) as { data?: { status: string }; status?: string };
        return body.data ?? body;
      };
      await expect.poll(async () => (await campaignNow()).status, { timeout: 30_000 }).toMatch(/^(SENT|CANCELLED)$/);
      expect(await campaignNow()).toMatchObject({ status: 'SENT', totalRecipients: 4, sentCount: 4 });
      await expect.poll(() => to.filter((a) => e.sink.messagesTo(a).length > 1).length, { timeout: 30_000 }).toBe(to.length);
      const scheduled = await campaign('Summer sale', 'Summer sale starts');
      await call(keys.secret, 'POST', `/campaigns/${scheduled}/send`, { scheduledFor: new Date(Date.now() + 2 * 86_400_000).toISOString() });
      // Events of the readers (before the opens: the latest activity shows those).
      for (const [i, address] of to.entries()) {
        for (let n = 0; n <= i; n++) await call(keys.public, 'POST', '/v1/track', { email: address, event: n % 2 ? 'opened_app' : 'viewed_pricing' });
      }
      // Two readers open (a browser's User-Agent), one of them clicks; one opens the campaign.
      const browser = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36' };
      for (const [i, [address, n]] of ([['ada@example.com', 0], ['grace@example.com', 0], ['ada@example.com', 1]] as const).entries()) {
        const mail = decodeMail(e.sink.messagesTo(address)[n]?.raw);
        const open = /\/t\/o\/[\w.-]+/.exec(mail)?.[0];
        expect(open, mail).toBeTruthy();
        expect((await fetch(`${e.base}${open}`, { headers: browser })).status).toBe(200);
        if (i === 0) {
          const click = /\/t\/c\/[\w.-]+/.exec(mail)?.[0];
          expect(click).toBeTruthy();
          expect((await fetch(`${e.base}${click}`, { headers: browser, redirect: 'manual' })).status).toBe(302);
        }
      }

      // Home: the domain and the first email are done; 8 sent, 3 of 8 opened, 1 clicked.
      await page.goto(`/app/projects/${projectId}`);
      await expect.poll(() => text(page, '[data-testid="setup-progress"]')).toBe('3 of 4 done');
      expect(await page.locator('[data-step="domain"]').getAttribute('data-done')).toBe('true');
      expect(await page.locator('[data-step="send"]').getAttribute('data-done')).toBe('true');
      await expect.poll(() => text(page, '[data-stat="Emails sent"]')).toBe('8');
      expect(await text(page, '[data-stat="Open rate"]')).toBe('37.5 %');
      expect(await text(page, '[data-stat="Click rate"]')).toBe('12.5 %');
      await expect.poll(() => page.getByRole('list', { name: 'Latest activity' }).locator('li[data-activity-type="email.click"]').count()).toBe(1);
      expect(await page.getByRole('list', { name: 'Latest activity' }).textContent()).toContain('https://example.com/release');
      await e.screenshot(page, 'home');

      // Activity: the three opens and the click, with the email's subject and the campaign; the scheduled campaign upcoming.
      await page.goto(`/app/projects/${projectId}/activity?types=email.click,email.open`);
      const list = page.getByRole('list', { name: 'Activity', exact: true });
      await expect.poll(() => list.locator('li').count()).toBe(4);
      expect(await list.locator('li[data-activity-type="email.open"]').count()).toBe(3);
      expect(await list.getByRole('link', { name: 'Spring newsletter' }).getAttribute('href')).toBe(`/app/projects/${projectId}/campaigns/${sent}`);
      const upcoming = page.getByRole('list', { name: 'Upcoming' });
      await expect.poll(() => upcoming.textContent()).toContain('Summer sale');
      expect(await upcoming.textContent()).toContain('in 2 days');
      expect(await list.textContent()).toContain('Our spring release');
      await page.goto(`/app/projects/${projectId}/activity`);
      await expect.poll(() => list.locator('li').count()).toBeGreaterThan(10);
      await e.screenshot(page, 'activity');

      // Analytics: the chart of this period (the previous one is empty), metric in the URL, top events.
      await page.goto(`/app/projects/${projectId}/analytics`);
      const sentTile = page.getByRole('button', { name: /^Sent/ });
      await expect.poll(() => sentTile.textContent()).toMatch(/^Sent8new/);
      const campaigns = page.getByRole('table', { name: 'Top campaigns' }).locator('tbody tr');
      await expect.poll(() => campaigns.count()).toBe(1);
      expect(await campaigns.first().textContent()).toMatch(/Spring newsletter.*4.*1 25\.0 %.*0 0\.0 %/);
      await page.locator('.recharts-line').first().waitFor();
      expect(await page.locator('.recharts-line').count()).toBe(2);
      await page.getByRole('button', { name: /^Opened/ }).click();
      await page.waitForURL((url) => url.searchParams.get('metric') === 'opened');
      await expect.poll(() => page.getByRole('button', { name: /^Opened/ }).getAttribute('aria-pressed')).toBe('true');
      expect(await page.getByRole('button', { name: /^Sent/ }).getAttribute('aria-pressed')).toBe('false');
      const events = page.getByRole('table', { name: 'Top events' }).locator('tbody tr');
      await expect.poll(() => events.count()).toBe(2);
      expect(await events.nth(0).textContent()).toMatch(/^viewed_pricing6/);
      await page.setViewportSize({ width: 1280, height: 1240 });
      await e.screenshot(page, 'analytics');
      await page.setViewportSize({ width: 1280, height: 800 });

      // Hourly points only for short ranges; a custom range in the URL, refused when reversed.
      const hour = page.getByRole('button', { name: 'hour', exact: true });
      expect(await hour.isDisabled()).toBe(true);
      await page.getByRole('button', { name: '7 days' }).click();
      await expect.poll(() => hour.isDisabled()).toBe(false);
      await hour.click();
      await page.waitForURL((url) => url.searchParams.get('interval') === 'hour' && url.searchParams.get('range') === '7');
      await expect.poll(() => hour.getAttribute('aria-pressed')).toBe('true');
      await page.locator('.recharts-line').first().waitFor();
      await page.getByRole('button', { name: 'Custom' }).click();
      await page.waitForURL((url) => url.searchParams.get('range') === 'custom');
      const from = new URL(page.url()).searchParams.get('from') ?? '';
      expect(new URL(page.url()).searchParams.get('to')).toBe(new Date().toISOString().slice(0, 10));
      expect(from).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      await page.getByLabel('To', { exact: true }).fill('2020-01-01');
      await page.waitForURL((url) => url.searchParams.get('to') === '2020-01-01');
      await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('The end date is before the start date.');

      // No serious accessibility problems on the three pages (axe-core, WCAG 2 A/AA).
      for (const [path, ready] of [
        ['', '[data-stat="Emails sent"]'],
        ['/activity', 'li[data-activity-type]'],
        ['/analytics', '.recharts-line'],
      ] as const) {
        await page.goto(`/app/projects/${projectId}${path}`);
        await page.locator(ready).first().waitFor();
        expect(await seriousA11yViolations(page), path || '/').toEqual([]);
      }
    } finally {
      await context.close();
    }
  }, 180_000);
});

/** A message of the sink as text, quoted-printable soft breaks and `=3D` undone (enough to find links). */
function decodeMail(raw: Buffer | undefined): string {
  const text = raw?.toString('utf8') ?? '';
  const qp = text.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
  // base64 parts too, for a body sent so.
  const b64 = [...text.matchAll(/Content-Transfer-Encoding: base64\r?\n(?:[^\r\n]+\r?\n)*\r?\n([A-Za-z0-9+/=\r\n]+)/gi)].map((m) => Buffer.from((m[1] ?? '').replace(/\s/g, ''), 'base64').toString('utf8'));
  return [qp, ...b64].join('\n');
}

/** The operator CLI's verify-domain (docs/domains.md) against the e2e server's database. */
async function verifyDomainByOperator(domain: string): Promise<void> {
  // The server's own environment (its DATABASE_URL and SECRET), as an operator on that host has it.
  const environ = readFileSync(`/proc/${e.server.child.pid}/environ`, 'utf8');
  const env = Object.fromEntries(
    environ
      .split('\0')
      .filter(Boolean)
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  const { stdout } = await promisify(execFile)(process.execPath, ['scripts/admin.mjs', 'verify-domain', '--domain', domain], { cwd: PROJECT_ROOT, env });
  expect(stdout).toContain(`marked ${domain} verified`);
}

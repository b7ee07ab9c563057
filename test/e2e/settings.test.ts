import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { type FakeStripe, startFakeStripe } from '../helpers/fake-stripe.js';
import { type E2E, seriousA11yViolations, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
let dns: TestDnsServer;
let receiver: Server;
let receiverUrl: string;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  dns = await startDnsServer();
  e = await startE2E({ DNS_SERVERS: dns.address });
}, 120_000);
afterAll(async () => {
  await e?.close();
  await dns?.close();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

/** The signed-in page's projects, as the API answers them (with the sk_ key for an OWNER). */
const projects = (page: Page) => page.evaluate(async () => (await (await fetch('/users/@me/projects')).json()) as { id: string; name: string; secret: string | null; public: string }[]);

describe('dashboard: domains and settings', () => {
  it('adds a domain, shows its DNS records with copy buttons, and verifies it once the record is published', async () => {
    const { context, page } = await e.newPage();
    try {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: e.base });
      const id = await signUpAndCreateProject(page, `domains-${Date.now()}@example.com`);
      await page.goto(`/app/projects/${id}/domains`);
      await page.getByText('No domains yet').waitFor();
      await page.getByRole('button', { name: 'Add domain' }).first().click();
      const dialog = page.getByRole('dialog');
      // The API's 422 beside the field.
      await dialog.getByLabel('Domain').fill('not a domain');
      await dialog.getByRole('button', { name: 'Add domain' }).click();
      await expect.poll(() => dialog.getByRole('alert').textContent()).toBeTruthy();
      await dialog.getByLabel('Domain').fill('Mail.Acme-E2E.example');
      await dialog.getByRole('button', { name: 'Add domain' }).click();
      const card = page.getByRole('region', { name: 'mail.acme-e2e.example' });
      await card.waitFor();
      await expect.poll(() => card.textContent()).toContain('Pending');
      const text = (await card.textContent()) ?? '';
      expect(text).toMatch(/mp\d{6}-[0-9a-f]{6}\._domainkey\.mail\.acme-e2e\.example/);
      expect(text).toContain('_dmarc.mail.acme-e2e.example');
      expect(text).toContain('v=DKIM1; k=rsa; p=');
      for (const purpose of ['DKIM', 'SPF', 'DMARC']) {
        await card.getByRole('button', { name: `Copy ${purpose} record name` }).waitFor();
        await card.getByRole('button', { name: `Copy ${purpose} record value` }).waitFor();
      }
      await card.getByRole('button', { name: 'Copy DKIM record value' }).click();
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      expect(copied).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
      await e.screenshot(page, 'domains');

      // Verify now: the records are looked up (no DNS has them here) and each shows why it is not found.
      await card.getByRole('button', { name: 'Verify now' }).click();
      await expect.poll(() => card.textContent(), { timeout: 30_000 }).toMatch(/Checked .*ago|Checked now/);
      const after = (await card.textContent()) ?? '';
      expect(after).toContain('Pending');
      expect(after).not.toContain('Not checked');
      expect(after).toMatch(/record not found|lookup (timed out|failed)/);

      // Published as shown (the copied value, at the shown name), Verify now verifies the domain.
      const dkimName = /mp\d{6}-[0-9a-f]{6}\._domainkey\.mail\.acme-e2e\.example/.exec(text)?.[0] ?? '';
      dns.set(dkimName, { TXT: [copied] });
      await card.getByRole('button', { name: 'Verify now' }).click();
      await expect.poll(() => card.textContent(), { timeout: 30_000 }).toContain('Verified');
      expect((await card.textContent()) ?? '').not.toContain('Pending');
      expect(await seriousA11yViolations(page)).toEqual([]);

      // The list comes from the API (the domain is stored, not just shown).
      await page.reload();
      await card.waitFor();
      await card.getByRole('button', { name: 'Delete mail.acme-e2e.example' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete domain' }).click();
      await page.getByText('No domains yet').waitFor();
    } finally {
      await context.close();
    }
  });

  it('rotates the keys after a confirmation: the key shown changes and the old sk_ key gets 401', async () => {
    const { context, page } = await e.newPage();
    try {
      const id = await signUpAndCreateProject(page, `keys-${Date.now()}@example.com`);
      const old = (await projects(page)).find((p) => p.id === id);
      expect(old?.secret).toMatch(/^sk_/);
      const before = await fetch(`${e.base}/webhook-endpoints`, { headers: { authorization: `Bearer ${old?.secret}` } });
      expect(before.status).toBe(200);

      await page.goto(`/app/projects/${id}/settings?tab=keys`);
      await page.getByRole('button', { name: 'Reveal secret key' }).click();
      await expect.poll(() => page.getByTestId('secret-key').textContent()).toBe(old?.secret);
      expect(await page.getByTestId('public-key').textContent()).toBe(old?.public);
      await e.screenshot(page, 'settings-keys');

      await page.getByRole('button', { name: 'Rotate keys' }).click();
      const dialog = page.getByRole('dialog');
      expect(await dialog.textContent()).toMatch(/old keys stop working/);
      await dialog.getByRole('button', { name: 'Rotate keys' }).click();
      await expect.poll(() => page.getByTestId('secret-key').textContent()).not.toBe(old?.secret);
      const shown = await page.getByTestId('secret-key').textContent();
      expect(shown).toMatch(/^sk_/);
      expect(await page.getByTestId('public-key').textContent()).not.toBe(old?.public);
      const fresh = (await projects(page)).find((p) => p.id === id);
      expect(fresh?.secret).toBe(shown);

      const after = await fetch(`${e.base}/webhook-endpoints`, { headers: { authorization: `Bearer ${old?.secret}` } });
      expect(after.status).toBe(401);
      const withNew = await fetch(`${e.base}/webhook-endpoints`, { headers: { authorization: `Bearer ${shown}` } });
      expect(withNew.status).toBe(200);
    } finally {
      await context.close();
    }
  });

  it('invites a member by email: the invitation is listed and its email arrives', async () => {
    const { context, page } = await e.newPage();
    try {
      const id = await signUpAndCreateProject(page, `members-${Date.now()}@example.com`);
      const invitee = `invitee-${Date.now()}@example.com`;
      await page.goto(`/app/projects/${id}/settings?tab=members`);
      await page.getByLabel('Email address').fill(invitee);
      await page.getByLabel('Role', { exact: true }).selectOption('ADMIN');
      await page.getByRole('button', { name: 'Invite' }).click();
      const invitations = page.getByRole('table', { name: 'Pending invitations' });
      await invitations.getByText(invitee).waitFor();
      expect(await invitations.textContent()).toContain('Admin');
      await expect.poll(() => e.sink.messagesTo(invitee).length, { timeout: 20_000 }).toBe(1);
      expect(e.sink.messagesTo(invitee)[0]?.raw.toString('utf8')).toContain('/app/invitations?token=');
      await e.screenshot(page, 'settings-members');

      await invitations.getByRole('button', { name: 'Revoke' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Revoke invitation' }).click();
      await page.getByText('No pending invitations.').waitFor();
    } finally {
      await context.close();
    }
  });

  it('adds a webhook endpoint, shows its secret once, sends a test ping and shows it in the delivery log', async () => {
    const { context, page } = await e.newPage();
    try {
      const id = await signUpAndCreateProject(page, `hooks-${Date.now()}@example.com`);
      await page.goto(`/app/projects/${id}/settings?tab=webhooks`);
      await page.getByText('No webhook endpoints').waitFor();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const form = page.getByRole('dialog');
      await form.getByLabel('Endpoint URL').fill(receiverUrl);
      await form.getByRole('button', { name: 'Add endpoint' }).click();
      await expect.poll(() => page.getByTestId('webhook-secret').textContent()).toMatch(/^whsec_[0-9a-f]{64}$/);
      await page.getByRole('button', { name: 'I have copied it' }).click();
      expect(new URL(page.url()).searchParams.get('endpoint')).toMatch(/^[0-9a-f-]{36}$/);

      await page.getByRole('button', { name: 'Send test ping' }).click();
      await expect.poll(() => page.getByRole('status').filter({ hasText: 'Test ping' }).textContent()).toMatch(/delivered: HTTP 204/);
      expect(received.some((r) => r.headers['x-webhook-event'] === 'webhook.test' && /^t=\d+,v1=[0-9a-f]{64}$/.test(String(r.headers['x-signature'])))).toBe(true);
      const log = page.getByRole('table', { name: 'Delivery log' });
      await log.getByRole('cell', { name: 'webhook.test', exact: true }).waitFor();
      expect(await log.textContent()).toContain('Delivered');

      // The status filter is in the URL and filters on the server.
      await page.getByLabel('Status').selectOption('FAILED');
      await log.getByText('No deliveries with this status.').waitFor();
      expect(new URL(page.url()).searchParams.get('status')).toBe('FAILED');
      await page.getByLabel('Status').selectOption('');
      await log.getByRole('cell', { name: 'webhook.test', exact: true }).waitFor();
      await e.screenshot(page, 'settings-webhooks');

      // Cursor pages: 25 more pings through the API (the sk_ key), 26 deliveries = a full page and one older.
      const endpointId = new URL(page.url()).searchParams.get('endpoint');
      const sk = (await projects(page)).find((p) => p.id === id)?.secret;
      for (let i = 0; i < 25; i++) {
        const res = await fetch(`${e.base}/webhook-endpoints/${endpointId}/test`, { method: 'POST', headers: { authorization: `Bearer ${sk}` } });
        expect(res.status).toBe(200);
      }
      await page.reload();
      await expect.poll(() => log.getByRole('cell', { name: 'webhook.test', exact: true }).count()).toBe(25);
      await page.getByRole('button', { name: 'Older' }).click();
      await expect.poll(() => log.getByRole('cell', { name: 'webhook.test', exact: true }).count()).toBe(1);
      expect(new URL(page.url()).searchParams.get('cursor')).toBeTruthy();
      expect(await page.getByRole('button', { name: 'Older' }).count()).toBe(0);
      await page.getByRole('button', { name: 'Newer' }).click();
      await expect.poll(() => log.getByRole('cell', { name: 'webhook.test', exact: true }).count()).toBe(25);
      expect(new URL(page.url()).searchParams.get('cursor')).toBeNull();
    } finally {
      await context.close();
    }
  });

  it('account settings (/app/settings, where OAuth linking returns): a signed-out visit goes to sign-in with next=; the link outcome and the linked providers', async () => {
    const { context, page } = await e.newPage();
    try {
      await page.goto('/app/settings?error=oauth_identity_taken');
      await page.waitForURL(/\/app\/login\?next=/);
      expect(decodeURIComponent(new URL(page.url()).searchParams.get('next') ?? '')).toBe('/settings?error=oauth_identity_taken');
      await signUpAndCreateProject(page, `account-${Date.now()}@example.com`);
      await page.goto('/app/settings?error=oauth_identity_taken');
      await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('already signs in to another user');
      await page.getByText('No provider is linked').waitFor();
      await page.goto('/app/settings?linked=github');
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('GitHub is linked');
      await page.getByRole('button', { name: 'Dismiss' }).click();
      expect(new URL(page.url()).search).toBe('');
    } finally {
      await context.close();
    }
  });

  it('renames the project (the switcher follows), then deletes it after typing its name', async () => {
    const { context, page } = await e.newPage();
    try {
      const id = await signUpAndCreateProject(page, `rename-${Date.now()}@example.com`, 'Acme');
      await page.goto(`/app/projects/${id}/settings`);
      await page.getByLabel('Project name').fill('Acme Renamed');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Switch project' }).textContent()).toContain('Acme Renamed');
      expect((await projects(page)).find((p) => p.id === id)?.name).toBe('Acme Renamed');

      await page.getByRole('tab', { name: 'Security' }).click();
      await page.getByText('Sending reputation').waitFor();
      expect(await page.getByRole('table', { name: 'Thresholds' }).textContent()).toContain('Bounce rate, 7 days');
      // Billing is off on this instance: no tab.
      expect(await page.getByRole('tab', { name: 'Billing' }).count()).toBe(0);
      await page.getByRole('tab', { name: 'Danger zone' }).click();
      expect(new URL(page.url()).searchParams.get('tab')).toBe('danger');
      await page.getByRole('button', { name: 'Delete project' }).click();
      const dialog = page.getByRole('dialog');
      const confirm = dialog.getByRole('button', { name: 'Delete project' });
      expect(await confirm.isDisabled()).toBe(true);
      await dialog.getByLabel(/Type/).fill('Acme');
      expect(await confirm.isDisabled()).toBe(true);
      await dialog.getByLabel(/Type/).fill('Acme Renamed');
      await confirm.click();
      await page.getByText('Create your first project').waitFor();
      expect(new URL(page.url()).pathname).toMatch(/^\/app\/?$/);
      expect(await projects(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('dashboard: billing (on, against a fake Stripe API)', () => {
  let b: E2E;
  let stripe: FakeStripe;
  beforeAll(async () => {
    stripe = await startFakeStripe();
    b = await startE2E({ STRIPE_SECRET_KEY: 'sk_test_e2e', STRIPE_WEBHOOK_SECRET: 'whsec_e2e_secret', STRIPE_PRICE_ID: 'price_e2e', STRIPE_API_URL: stripe.url, BILLING_FREE_EMAILS_PER_MONTH: '1000' });
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await stripe?.close();
  });

  it('shows the plan and usage, saves a cap (422 beside its field), starts a checkout, and shows the billing tab where the checkout returns', async () => {
    const { context, page } = await b.newPage();
    try {
      const id = await signUpAndCreateProject(page, `billing-${Date.now()}@example.com`);
      await page.goto(`/app/projects/${id}/settings`);
      await page.getByRole('tab', { name: 'Billing' }).click();
      expect(new URL(page.url()).searchParams.get('tab')).toBe('billing');
      await page.getByText('Free allowance (all categories)').waitFor();
      expect(await page.getByText('0 of 1,000').count()).toBe(1);

      await page.getByLabel('Transactional cap').fill('2000000000');
      await page.getByRole('button', { name: 'Save caps' }).click();
      await expect.poll(() => page.getByRole('alert').first().textContent()).toBeTruthy();
      await page.getByLabel('Transactional cap').fill('500');
      await page.getByRole('button', { name: 'Save caps' }).click();
      await page.getByText('0 of 500').waitFor();
      await b.screenshot(page, 'settings-billing');
      const limits = await page.evaluate(async (p) => (await (await fetch(`/users/@me/projects/${p}/billing-limits`)).json()) as { transactional: { limit: number | null } }, id);
      expect(limits.transactional.limit).toBe(500);

      await page.route('https://checkout.stripe.test/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Stripe Checkout</title>' }));
      await page.getByRole('button', { name: 'Subscribe' }).click();
      await page.waitForURL(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
      const session = stripe.calls.filter((c) => c.path === '/v1/checkout/sessions').at(-1);
      expect(session?.form.success_url).toBe(`${b.base}/app/projects/${id}/billing?checkout=success`);

      await page.goto(`/app/projects/${id}/billing?checkout=cancelled`);
      await page.getByText('The checkout was cancelled: nothing was charged.').waitFor();
      const url = new URL(page.url());
      expect(url.pathname).toBe(`/app/projects/${id}/settings`);
      expect(url.searchParams.get('tab')).toBe('billing');
      expect(await page.getByRole('tab', { name: 'Billing' }).getAttribute('aria-selected')).toBe('true');
    } finally {
      await context.close();
    }
  });
});

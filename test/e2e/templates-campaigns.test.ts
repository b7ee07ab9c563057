import { sql } from 'kysely';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { type E2E, sidebarLink, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

/**
 * Marks the project's domain verified and its owner's email verified, in the server's database
 * (as the operator CLI's verify-domain does; no DNS in the test). The harness keeps the database
 * name to itself, so the e2e database holding this project is looked up.
 */
async function verifySender(projectId: string, domainId: string, ownerEmail: string): Promise<void> {
  const admin = connect(inject('databaseUrl'), { max: 1 });
  let names: string[];
  try {
    const { rows } = await sql<{ datname: string }>`SELECT datname FROM pg_database WHERE datname LIKE 'mp_e2e_%'`.execute(admin.db);
    names = rows.map((r) => r.datname);
  } finally {
    await admin.close();
  }
  for (const name of names) {
    const url = new URL(inject('databaseUrl'));
    url.pathname = `/${name}`;
    const db = connect(url.toString(), { max: 1 });
    try {
      const { rows } = await sql<{ ok: number }>`SELECT 1 AS ok FROM domains WHERE id = ${domainId}::uuid AND project_id = ${projectId}::uuid`.execute(db.db);
      if (rows.length === 0) continue;
      await sql`UPDATE domains SET verified = true, verified_at = now() WHERE id = ${domainId}::uuid`.execute(db.db);
      await sql`UPDATE users SET email_verified_at = now() WHERE email = ${ownerEmail} AND email_verified_at IS NULL`.execute(db.db);
      return;
    } catch {
      // Another test's database that is being dropped, or not migrated yet: not ours.
    } finally {
      await db.close();
    }
  }
  throw new Error(`no e2e database holds project ${projectId}`);
}

/** A signed-up owner's project with a verified sender domain (one per project: a domain verified by one project is refused to others) and its secret key as `call`. */
async function setUpProject(page: import('playwright-core').Page, projectName: string, sendingDomain: string) {
  const owner = `owner-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@example.com`;
  const projectId = await signUpAndCreateProject(page, owner, projectName);
  const projects = (await (await page.request.get('/users/@me/projects')).json()) as { id: string; secret: string }[];
  const secret = projects.find((p) => p.id === projectId)?.secret;
  expect(secret).toMatch(/^sk_/);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${e.base}${path}`, { method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = res.status === 204 ? undefined : await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json as Record<string, unknown>;
  };
  const domain = (await call('POST', '/domains', { domain: sendingDomain })) as { id: string };
  await verifySender(projectId, domain.id, owner);
  return { projectId, owner, call };
}

/** A 2×1 PNG. */
const png = () => sharp({ create: { width: 2, height: 1, channels: 3, background: '#3366ff' } }).png().toBuffer();

describe('dashboard: templates and campaigns in a real browser', () => {
  it('writes a template previewed as a contact, sends a campaign from it to all contacts and shows its results', async () => {
    const { context, page } = await e.newPage();
    try {
      const { call } = await setUpProject(page, 'Newsletter Co', 'example.com');
      await call('POST', '/contacts', { email: 'ann@example.org', data: { firstName: 'Ann', plan: 'Pro' } });
      await call('POST', '/contacts', { email: 'bob@example.org', data: { firstName: 'Bob', plan: 'Free' } });

      // Templates: the empty list, then a new template.
      await sidebarLink(page, 'Templates').click();
      await page.waitForURL(/\/templates$/);
      await page.getByText('No templates yet').waitFor();
      await page.getByRole('link', { name: 'New template' }).first().click();
      await page.waitForURL(/\/templates\/new$/);
      await page.getByLabel('Name', { exact: true }).fill('Monthly news');
      await page.getByLabel('Subject').fill('Hello {{firstName ?? "there"}}');
      await page.getByLabel('From address').fill('news@example.com');
      await page.getByRole('textbox', { name: 'HTML body' }).fill('<h1>Hi {{firstName ?? "there"}} & welcome</h1>\n<p id="plan">Your plan: {{plan}}</p>\n<p>{{favoriteColour}}</p>');

      // The preview renders as the newest contact at first (Bob), then as the contact picked by email.
      const preview = page.frameLocator('iframe[title="Email preview"]');
      await expect.poll(() => preview.locator('h1').textContent()).toBe('Hi Bob & welcome');
      await page.getByLabel('Preview as contact').fill('ann@');
      await page.getByRole('option', { name: 'ann@example.org' }).click();
      await expect.poll(() => preview.locator('h1').textContent()).toBe('Hi Ann & welcome');
      await expect.poll(() => preview.locator('#plan').textContent()).toBe('Your plan: Pro');
      await expect.poll(() => page.getByTestId('preview-subject').textContent()).toBe('Hello Ann');
      expect(await page.locator('iframe[title="Email preview"]').getAttribute('sandbox')).toBe('');
      // favoriteColour is no contact's data key: listed as unknown, and underlined in the editor.
      await expect.poll(() => page.getByRole('list', { name: 'Unknown variables' }).textContent()).toBe('{{favoriteColour}}');
      expect(await page.locator('.cm-unknown-variable').allTextContents()).toEqual(['{{favoriteColour}}']);
      // Autocomplete offers the project's data keys after {{.
      await page.getByRole('textbox', { name: 'HTML body' }).press('Control+End');
      await page.keyboard.type('\n{{pl');
      await page.getByRole('option', { name: /plan/ }).first().waitFor();
      await page.keyboard.press('Escape');
      await page.keyboard.press('Control+z');

      await page.getByRole('button', { name: 'Create template' }).click();
      await page.waitForURL(/\/templates\/[0-9a-f-]{36}$/);
      const templateId = /\/templates\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';
      const stored = (await call('GET', `/templates/${templateId}`)) as { name: string; from: string; body: string };
      expect(stored).toMatchObject({ name: 'Monthly news', from: 'news@example.com' });
      expect(stored.body).toContain('<p id="plan">Your plan: {{plan}}</p>');
      await expect.poll(() => preview.locator('h1').textContent()).toMatch(/^Hi (Ann|Bob) & welcome$/);
      const frame = page.locator('iframe[title="Email preview"]');
      await page.getByRole('button', { name: 'Mobile' }).click();
      await expect.poll(async () => (await frame.boundingBox())?.width).toBe(375);
      await page.getByRole('button', { name: 'Desktop' }).click();
      await expect.poll(async () => (await frame.boundingBox())?.width).toBeGreaterThan(375);
      // The screenshot without the toast, tall enough to show the editor and the preview.
      await page.setViewportSize({ width: 1280, height: 1150 });
      await page.reload();
      await expect.poll(() => preview.locator('h1').textContent()).toMatch(/^Hi (Ann|Bob) & welcome$/);
      await e.screenshot(page, 'template-editor');
      await page.setViewportSize({ width: 1280, height: 800 });

      await sidebarLink(page, 'Templates').click();
      await page.getByRole('link', { name: 'Monthly news' }).waitFor();
      await page.getByLabel('Search templates').fill('nothing like it');
      await page.getByText('No template matches these filters.').waitFor();
      expect(new URL(page.url()).searchParams.get('search')).toBe('nothing like it');
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await page.getByRole('link', { name: 'Monthly news' }).waitFor();
      await page.reload();
      await page.getByRole('link', { name: 'Monthly news' }).waitFor();
      await e.screenshot(page, 'templates');

      // A campaign from the template, to all contacts, sent now through the confirmation.
      await page.getByRole('link', { name: 'Monthly news' }).click();
      await page.getByRole('link', { name: 'Use in campaign' }).click();
      await page.waitForURL(/\/campaigns\/new\?templateId=/);
      await expect.poll(() => page.getByLabel('Subject').inputValue()).toBe('Hello {{firstName ?? "there"}}');
      await page.getByLabel('Campaign name').fill('November news');
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('2');
      await page.getByRole('button', { name: 'Send…' }).click();
      const dialog = page.getByRole('dialog');
      await expect.poll(() => dialog.getByTestId('recipient-count').textContent()).toBe('2');
      // Bob's relay holds its answer, so the campaign stays SENDING with one of two processed.
      e.sink.hold('bob@example.org', 'reply');
      await dialog.getByRole('button', { name: 'Send to 2' }).click();
      await page.waitForURL(/\/campaigns\/[0-9a-f-]{36}$/);
      const campaignId = /\/campaigns\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';
      await expect.poll(() => page.getByTestId('campaign-status').textContent(), { timeout: 20_000 }).toBe('Sending');
      await expect.poll(() => page.getByTestId('send-progress').textContent(), { timeout: 20_000 }).toBe('1 of 2 processed (50.0 %)');
      expect(await page.getByRole('progressbar', { name: 'Sending progress' }).getAttribute('aria-valuenow')).toBe('1');
      e.sink.release();

      // The page follows the send (polled every second) until it is SENT with 2 sent.
      await expect.poll(() => page.getByTestId('campaign-status').textContent(), { timeout: 30_000 }).toBe('Sent');
      await expect.poll(() => page.getByTestId('funnel-sent').locator('strong').textContent(), { timeout: 10_000 }).toBe('2');
      await e.sink.waitForMessages(2, 20_000);
      const toAnn = e.sink.messagesTo('ann@example.org');
      const toBob = e.sink.messagesTo('bob@example.org');
      expect(toAnn).toHaveLength(1);
      expect(toBob).toHaveLength(1);
      expect(toAnn[0]?.raw.toString()).toMatch(/Subject: Hello Ann/);
      expect(toBob[0]?.raw.toString()).toMatch(/Subject: Hello Bob/);
      const campaigns = (await call('GET', '/campaigns')) as { data: { id: string; name: string; status: string }[] };
      expect(campaigns.data).toEqual([expect.objectContaining({ id: campaignId, name: 'November news', status: 'SENT' })]);
      await page.reload();
      await expect.poll(() => page.getByTestId('funnel-sent').locator('strong').textContent()).toBe('2');
      await e.screenshot(page, 'campaign');

      await sidebarLink(page, 'Campaigns').click();
      await page.waitForURL(/\/campaigns$/);
      await page.getByRole('link', { name: 'November news' }).waitFor();
      await page.getByRole('tab', { name: 'Draft' }).click();
      await page.getByText('No campaign matches these filters.').waitFor();
      expect(new URL(page.url()).searchParams.get('status')).toBe('DRAFT');
      await page.getByRole('tab', { name: 'Sent' }).click();
      await page.getByRole('link', { name: 'November news' }).waitFor();
      await page.reload();
      await page.getByRole('link', { name: 'November news' }).waitFor();
      await e.screenshot(page, 'campaigns');
    } finally {
      await context.close();
    }
  }, 180_000);

  it('refuses an unverified sender beside its field, uploads an image into the body, duplicates and deletes a template behind a confirmation', async () => {
    const { context, page } = await e.newPage();
    try {
      const { projectId, call } = await setUpProject(page, 'Images', 'images.example');
      await page.goto(`/app/projects/${projectId}/templates/new`);
      await page.getByLabel('Name', { exact: true }).fill('Welcome');
      await page.getByLabel('From address').fill('hi@not-verified.example');
      await page.getByRole('button', { name: 'Create template' }).click();
      // The API's 403 about the sender domain is shown under the From field.
      await expect.poll(() => page.getByRole('alert').filter({ hasText: 'not-verified.example' }).count()).toBe(1);
      expect(page.url()).toMatch(/\/templates\/new$/);
      // Unsaved changes: leaving asks first.
      await sidebarLink(page, 'Templates').click();
      await page.getByRole('dialog', { name: 'Leave without saving?' }).getByRole('button', { name: 'Cancel' }).click();
      // Closed (and focus given back) before typing on.
      await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
      expect(page.url()).toMatch(/\/templates\/new$/);
      await page.getByLabel('From address').fill('hi@images.example');
      expect(await page.getByLabel('From address').inputValue()).toBe('hi@images.example');

      await page.getByLabel('Image file').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: await png() });
      await expect.poll(() => page.getByRole('textbox', { name: 'HTML body' }).textContent()).toMatch(/<img src="http:\/\/127\.0\.0\.1:\d+\/files\/[0-9a-f-]+\.png" alt="logo" width="2"/);
      const src = (await page.frameLocator('iframe[title="Email preview"]').locator('img').getAttribute('src')) ?? '';
      expect((await fetch(src)).headers.get('content-type')).toBe('image/png');
      await page.getByRole('button', { name: 'Create template' }).click();
      await page.waitForURL(/\/templates\/[0-9a-f-]{36}$/);

      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Duplicate' }).click();
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Welcome (copy)');
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Delete…' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByText('No workflow or campaign uses it.').waitFor();
      expect(await dialog.textContent()).toContain('“Welcome (copy)” is deleted for good');
      await dialog.getByRole('button', { name: 'Delete template' }).click();
      await page.waitForURL(/\/templates$/);
      await page.getByRole('link', { name: 'Welcome', exact: true }).waitFor();
      const list = (await call('GET', '/templates')) as { data: { name: string }[] };
      expect(list.data.map((t) => t.name)).toEqual(['Welcome']);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('sends a campaign to contacts matching conditions built in the composer, with a live count the confirmation repeats, and edits a condition stored through the API', async () => {
    const { context, page } = await e.newPage();
    try {
      const { projectId, call } = await setUpProject(page, 'Filters', 'plans.example');
      await call('POST', '/contacts', { email: 'pro-1@example.org', data: { firstName: 'Pia', plan: 'pro' } });
      await call('POST', '/contacts', { email: 'pro-2@example.org', data: { firstName: 'Pete', plan: 'pro' } });
      await call('POST', '/contacts', { email: 'free@example.org', data: { firstName: 'Fay', plan: 'free' } });
      // Matching, but not reached by a marketing send: unsubscribed, and a suppressed address.
      await call('POST', '/contacts', { email: 'pro-unsub@example.org', subscribed: false, data: { firstName: 'Uma', plan: 'pro' } });
      await call('POST', '/contacts', { email: 'pro-suppressed@example.org', data: { firstName: 'Sid', plan: 'pro' } });
      await call('POST', '/suppressions', { email: 'pro-suppressed@example.org' });

      await page.goto(`/app/projects/${projectId}/campaigns/new`);
      await page.getByLabel('Campaign name').fill('Pro upgrade');
      await page.getByLabel('Subject').fill('News for {{firstName}}');
      await page.getByLabel('From address').fill('team@plans.example');
      await page.getByRole('textbox', { name: 'HTML body' }).fill('<p>Hello {{firstName}}, pro plan news</p>');
      // All contacts (marketing): the 3 subscribed and not suppressed.
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('3');

      await page.getByLabel('Contacts matching conditions').check();
      // An incomplete row: a hint, no count.
      await expect.poll(() => page.getByTestId('audience-summary').textContent()).toBe('Complete the conditions to count the recipients');
      const row = page.getByRole('group', { name: 'Condition 1', exact: true });
      await row.getByLabel('Field').selectOption('data.plan');
      await row.getByLabel('Operator').selectOption('equals');
      await row.getByLabel('Value').fill('pro');
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('2');
      await row.getByLabel('Value').fill('free');
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('1');
      await row.getByLabel('Value').fill('pro');
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('2');
      await expect.poll(() => page.getByTestId('audience-summary').textContent()).toBe('2 recipients (subscribed, not suppressed)');
      await page.setViewportSize({ width: 1280, height: 1000 });
      await e.screenshot(page, 'campaign-composer');
      await page.setViewportSize({ width: 1280, height: 800 });

      // Send…: saved as a FILTERED campaign, confirmed with the same count, delivered to the 2 matching.
      await page.getByRole('button', { name: 'Send…' }).click();
      const dialog = page.getByRole('dialog');
      await expect.poll(() => dialog.getByTestId('recipient-count').textContent()).toBe('2');
      expect(await dialog.textContent()).toContain('Contacts matching a condition (subscribed only): 2 recipients');
      const sentBefore = e.sink.messages.length;
      await dialog.getByRole('button', { name: 'Send to 2' }).click();
      await page.waitForURL(/\/campaigns\/[0-9a-f-]{36}$/);
      const campaignId = /\/campaigns\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';
      await expect.poll(() => page.getByTestId('campaign-status').textContent(), { timeout: 30_000 }).toBe('Sent');
      await e.sink.waitForMessages(sentBefore + 2, 20_000);
      expect(e.sink.messagesTo('pro-1@example.org')).toHaveLength(1);
      expect(e.sink.messagesTo('pro-2@example.org')).toHaveLength(1);
      expect(e.sink.messagesTo('pro-1@example.org')[0]?.raw.toString()).toMatch(/Subject: News for Pia/);
      for (const other of ['free@example.org', 'pro-unsub@example.org', 'pro-suppressed@example.org']) expect(e.sink.messagesTo(other)).toHaveLength(0);
      const sent = (await call('GET', `/campaigns/${campaignId}`)) as { data?: unknown } & Record<string, unknown>;
      const stored = (sent.data ?? sent) as { audienceType: string; audienceCondition: unknown };
      expect(stored).toMatchObject({ audienceType: 'FILTERED', audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } });

      // A FILTERED draft created through the API opens with its condition in the builder; edits are saved with PUT.
      const created = (await call('POST', '/campaigns', {
        name: 'API filtered',
        subject: 'Hi',
        body: '<p>Hi</p>',
        from: 'team@plans.example',
        audienceType: 'FILTERED',
        audienceCondition: { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }, { filters: [{ field: 'email', operator: 'contains', value: 'pro-2' }] }] },
      })) as { data?: { id: string }; id?: string };
      const draftId = created.data?.id ?? created.id ?? '';
      await page.goto(`/app/projects/${projectId}/campaigns/${draftId}/edit`);
      await expect.poll(() => page.getByLabel('Contacts matching conditions').isChecked()).toBe(true);
      await expect.poll(() => page.getByLabel('Conditions: match').inputValue()).toBe('OR');
      const first = page.getByRole('group', { name: 'Condition 1', exact: true });
      await expect.poll(() => first.getByLabel('Value').inputValue()).toBe('free');
      expect(await page.getByRole('group', { name: 'Condition 2', exact: true }).getByLabel('Value').inputValue()).toBe('pro-2');
      // free@ or pro-2@.
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('2');
      await page.getByRole('button', { name: 'Remove condition 2' }).click();
      await first.getByLabel('Value').fill('pro');
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('2');
      // A row without a field: no count, and a save is refused with the row saying why.
      await page.getByRole('button', { name: 'Add condition to conditions' }).click();
      await expect.poll(() => page.getByTestId('audience-summary').textContent()).toBe('Complete the conditions to count the recipients');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'One condition needs attention before saving or sending.' }).waitFor();
      await page.getByRole('group', { name: 'Condition 2', exact: true }).getByRole('alert').filter({ hasText: 'Choose a field' }).waitFor();
      const unsaved = (await call('GET', `/campaigns/${draftId}`)) as { data?: unknown } & Record<string, unknown>;
      expect(((unsaved.data ?? unsaved) as { audienceCondition: { groups: unknown[] } }).audienceCondition.groups).toHaveLength(2);
      await page.getByRole('button', { name: 'Remove condition 2' }).click();
      await first.getByLabel('Value').fill('free');
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('1');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await expect.poll(async () => {
        const c = (await call('GET', `/campaigns/${draftId}`)) as { data?: unknown } & Record<string, unknown>;
        return (c.data ?? c) as { audienceType: string; audienceCondition: unknown };
      }).toMatchObject({ audienceType: 'FILTERED', audienceCondition: { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] } });
      await page.reload();
      await expect.poll(() => page.getByRole('group', { name: 'Condition 1', exact: true }).getByLabel('Value').inputValue()).toBe('free');
      expect(await page.getByRole('group', { name: 'Condition 2', exact: true }).count()).toBe(0);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('schedules a campaign to a segment, sends a test, cancels it behind a confirmation and duplicates it as a draft', async () => {
    const { context, page } = await e.newPage();
    try {
      const { projectId, call } = await setUpProject(page, 'Schedules', 'vip.example');
      await call('POST', '/contacts', { email: 'vip@example.org', data: { firstName: 'Vera', tier: 'vip' } });
      await call('POST', '/contacts', { email: 'other@example.org', data: { firstName: 'Otto', tier: 'basic' } });
      const segment = (await call('POST', '/segments', { name: 'VIPs', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.tier', operator: 'equals', value: 'vip' }] }] } })) as { id: string };

      await page.goto(`/app/projects/${projectId}/campaigns/new`);
      await page.getByLabel('Campaign name').fill('VIP preview');
      await page.getByLabel('Subject').fill('For you, {{firstName}}');
      await page.getByLabel('From address').fill('club@vip.example');
      await page.getByRole('textbox', { name: 'HTML body' }).fill('<p>Early access for {{firstName}}</p>');
      await page.getByLabel('A segment').check();
      await page.getByLabel('Segment', { exact: true }).selectOption({ label: 'VIPs (1)' });
      await expect.poll(() => page.getByTestId('audience-count').textContent()).toBe('1');

      // A test email first (the draft is saved on the way), to an address of the user's choice.
      await page.getByRole('button', { name: 'Send test' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Send to').fill('vip@example.org');
      await dialog.getByRole('button', { name: 'Send test' }).click();
      await expect.poll(() => e.sink.messagesTo('vip@example.org').length, { timeout: 20_000 }).toBe(1);
      expect(e.sink.messagesTo('vip@example.org')[0]?.raw.toString()).toMatch(/Subject: For you, Vera/);
      // The draft saved on the way has its own address now (the same composer goes on).
      await page.waitForURL(/\/campaigns\/[0-9a-f-]{36}\/edit$/);
      expect(await page.getByLabel('Campaign name').inputValue()).toBe('VIP preview');

      await page.getByRole('button', { name: 'Send…' }).click();
      await expect.poll(() => dialog.getByTestId('recipient-count').textContent()).toBe('1');
      await dialog.getByLabel('Schedule for later').check();
      await dialog.getByLabel(/Send at/).fill('2099-06-01T09:30');
      await dialog.getByRole('button', { name: 'Schedule' }).click();
      await page.waitForURL(/\/campaigns\/[0-9a-f-]{36}$/);
      await expect.poll(() => page.getByTestId('campaign-status').textContent()).toBe('Scheduled');
      const campaigns = (await call('GET', '/campaigns')) as { data: { id: string; status: string; scheduledFor: string; audienceType: string; segmentId: string }[] };
      // One campaign: the draft saved for the test was sent, not created again. The browser runs in UTC.
      expect(campaigns.data).toEqual([expect.objectContaining({ status: 'SCHEDULED', audienceType: 'SEGMENT', segmentId: segment.id })]);
      expect(Date.parse(campaigns.data[0]?.scheduledFor ?? '')).toBe(Date.parse('2099-06-01T09:30:00Z'));

      await page.getByRole('button', { name: 'Cancel campaign' }).click();
      expect(await dialog.textContent()).toContain('cannot be sent again');
      await dialog.getByRole('button', { name: 'Cancel campaign' }).click();
      await expect.poll(() => page.getByTestId('campaign-status').textContent()).toBe('Cancelled');
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Duplicate' }).click();
      await page.waitForURL(/\/campaigns\/[0-9a-f-]{36}\/edit$/);
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('VIP preview (copy)');
      await expect.poll(() => page.getByLabel('Subject').inputValue()).toBe('For you, {{firstName}}');
      await sidebarLink(page, 'Campaigns').click();
      await page.getByRole('tab', { name: 'Cancelled' }).click();
      await page.getByRole('link', { name: 'VIP preview', exact: true }).waitFor();
    } finally {
      await context.close();
    }
  }, 120_000);
});

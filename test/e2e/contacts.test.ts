import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2E, seriousA11yViolations, sidebarLink, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, string | number | boolean>;
}

/** The API as the page's session sees it (cookie + X-Project-Id), to check what the page wrote. */
async function apiGet<T>(page: Page, projectId: string, path: string): Promise<T> {
  return page.evaluate(
    async ({ projectId, path }) => {
      const r = await fetch(path, { headers: { 'x-project-id': projectId } });
      if (!r.ok) throw new Error(`${path}: ${r.status}`);
      return (await r.json()) as T;
    },
    { projectId, path },
  );
}

/** Waits for the toasts to close (5 s), so screenshots show the page. */
async function toastsGone(page: Page): Promise<void> {
  await expect.poll(() => page.locator('li[data-state="open"]').count(), { timeout: 10_000 }).toBe(0);
}

const CSV = ['email,plan,age', 'ada@example.com,pro,36', 'bob@example.com,basic,41', 'carol@example.com,pro,29', 'not-an-email,basic,1', 'dave@example.com,pro,50', ''].join('\n');

describe('dashboard: contacts', () => {
  it('imports a CSV with a preview and progress, filters, edits a contact, toggles its subscription and bulk-unsubscribes a selection', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `contacts-${Date.now()}@example.com`);
      await sidebarLink(page, 'Contacts').click();
      await page.waitForURL(/\/contacts$/);
      await page.getByText('No contacts yet').waitFor();

      // Import: the preview shows the parsed rows before anything is sent.
      await page.getByRole('button', { name: 'Import CSV' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('CSV file').setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) });
      const preview = dialog.getByRole('table', { name: 'Preview of the file' });
      await preview.getByRole('cell', { name: 'carol@example.com' }).waitFor();
      expect(await preview.locator('tbody tr').count()).toBe(5);
      expect(await dialog.getByText('3 columns: email and 2 data keys').count()).toBe(1);
      expect((await apiGet<{ total: number }>(page, projectId, '/contacts?limit=1')).total).toBe(0);
      await dialog.getByRole('button', { name: 'Import', exact: true }).click();
      // The job's status is polled to the end: 4 rows imported, the bad one reported by its row number.
      await dialog.getByText('Import complete.').waitFor({ timeout: 20_000 });
      await expect.poll(() => dialog.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('5');
      expect(await dialog.getByText('4 imported · 1 failed').count()).toBe(1);
      const errors = dialog.getByRole('list', { name: 'Row errors' });
      expect(await errors.textContent()).toMatch(/Row 4.*Invalid email "not-an-email"/);
      await e.screenshot(page, 'contacts-import');
      await dialog.getByRole('button', { name: 'Done' }).click();

      const table = page.getByRole('table', { name: 'Contacts' });
      await expect.poll(() => table.locator('tbody tr').count()).toBe(4);
      expect(await page.getByText('4 contacts', { exact: true }).count()).toBe(1);

      // Search (debounced, kept in the URL) filters the table.
      await page.getByLabel('Search').fill('car');
      await page.waitForURL(/search=car/);
      await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
      expect(await table.locator('tbody tr').first().textContent()).toContain('carol@example.com');
      await page.getByLabel('Search').fill('');
      await page.waitForURL((u) => !u.search.includes('search='));
      await expect.poll(() => table.locator('tbody tr').count()).toBe(4);

      // A data key as a column, from the column chooser, kept in the URL.
      await page.getByRole('button', { name: 'Choose columns' }).click();
      await page.getByRole('checkbox', { name: 'plan' }).click();
      await page.waitForURL(/cols=plan/);
      await page.keyboard.press('Escape');
      await table.getByRole('columnheader', { name: 'plan', exact: true }).waitFor();

      // The contact page: edit a data key with its type, toggle the subscription.
      await table.getByRole('link', { name: 'ada@example.com' }).click();
      await page.waitForURL(/\/contacts\/[0-9a-f-]{36}$/);
      const adaId = /\/contacts\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';
      await page.getByRole('heading', { name: 'ada@example.com' }).waitFor();
      expect(await page.getByLabel('Value of plan').inputValue()).toBe('pro');
      await page.getByLabel('Value of plan').fill('enterprise');
      // The import stored age as text; the editor turns it into a number.
      await page.getByLabel('Type of age').selectOption('number');
      await page.getByLabel('Value of age').fill('37');
      await page.getByRole('button', { name: 'Add key' }).click();
      await page.getByLabel('Key of row 3').fill('vip');
      await page.getByLabel('Type of vip').selectOption('boolean');
      await page.getByRole('button', { name: 'Save data' }).click();
      await page.getByText('Data saved', { exact: true }).waitFor();
      const ada = await apiGet<Contact>(page, projectId, `/contacts/${adaId}`);
      expect(ada.data).toEqual({ plan: 'enterprise', age: 37, vip: true });

      expect(ada.subscribed).toBe(true);
      await page.getByRole('switch', { name: 'Subscribed' }).click();
      await expect.poll(async () => (await apiGet<Contact>(page, projectId, `/contacts/${adaId}`)).subscribed).toBe(false);
      await page.getByRole('switch', { name: 'Subscribed', checked: false }).waitFor();
      // The events timeline shows the change the database recorded.
      await page.getByRole('list', { name: 'Events' }).getByText('contact.unsubscribed').waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);

      // Change the address from the "…" menu: another contact's address is refused (409) beside the field.
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Change email' }).click();
      const emailDialog = page.getByRole('dialog');
      await emailDialog.getByLabel('Email').fill('bob@example.com');
      await emailDialog.getByRole('button', { name: 'Change email' }).click();
      await expect.poll(() => emailDialog.getByRole('alert').textContent()).toMatch(/\S/);
      expect((await apiGet<Contact>(page, projectId, `/contacts/${adaId}`)).email).toBe('ada@example.com');
      await emailDialog.getByLabel('Email').fill('Ada.Lovelace@example.com');
      await emailDialog.getByRole('button', { name: 'Change email' }).click();
      await page.getByRole('heading', { name: 'ada.lovelace@example.com' }).waitFor();
      expect((await apiGet<Contact>(page, projectId, `/contacts/${adaId}`)).email).toBe('ada.lovelace@example.com');
      await toastsGone(page);
      await e.screenshot(page, 'contact');

      // Bulk-unsubscribe two selected contacts: a job, polled to the end, then a toast.
      await sidebarLink(page, 'Contacts').click();
      await page.waitForURL(/\/contacts(\?|$)/);
      await table.getByRole('checkbox', { name: 'Select bob@example.com' }).click();
      await table.getByRole('checkbox', { name: 'Select carol@example.com' }).click();
      await page.getByText('2 selected').waitFor();
      await page.getByRole('button', { name: 'Unsubscribe' }).click();
      await page.getByText('2 contacts unsubscribed', { exact: true }).waitFor({ timeout: 20_000 });
      await expect.poll(() => page.getByRole('progressbar', { name: 'Bulk unsubscribe done' }).getAttribute('aria-valuenow')).toBe('2');
      const unsubscribed = await apiGet<{ data: Contact[]; total: number }>(page, projectId, '/contacts?subscribed=false&sort=email&dir=asc');
      expect(unsubscribed.data.map((c) => c.email)).toEqual(['ada.lovelace@example.com', 'bob@example.com', 'carol@example.com']);

      // The subscription filter shows them, from the URL.
      await page.getByLabel('Subscription').selectOption('false');
      await page.waitForURL(/subscribed=false/);
      await expect.poll(() => table.locator('tbody tr').count()).toBe(3);
      await page.getByLabel('Subscription').selectOption('');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(4);
      expect(await seriousA11yViolations(page)).toEqual([]);

      // A shared view: columns restored from the URL.
      await page.goto(`/app/projects/${projectId}/contacts?cols=plan,age`);
      await table.getByRole('columnheader', { name: 'age', exact: true }).waitFor();
      await table.getByRole('cell', { name: 'basic' }).waitFor();
      await toastsGone(page);
      await e.screenshot(page, 'contacts');
      // The dark theme (same tokens) passes the same checks.
      await page.evaluate(() => document.documentElement.classList.add('dark'));
      expect(await seriousA11yViolations(page)).toEqual([]);
      await table.getByRole('link', { name: 'dave@example.com' }).click();
      await page.getByRole('heading', { name: 'dave@example.com' }).waitFor();
      await page.getByRole('list', { name: 'Events' }).or(page.getByText('No events yet', { exact: false })).first().waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('pages by cursor, exports the filtered contacts as a file, and bulk-deletes "all N matching" beyond the page', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `contacts-bulk-${Date.now()}@example.com`);
      await page.evaluate(async (projectId) => {
        for (let i = 0; i < 60; i += 1) {
          const email = `c${String(i).padStart(2, '0')}@example.com`;
          const r = await fetch('/contacts', { method: 'POST', headers: { 'content-type': 'application/json', 'x-project-id': projectId }, body: JSON.stringify({ email, data: { n: i } }) });
          if (r.status !== 201) throw new Error(`${email}: ${r.status}`);
        }
      }, projectId);

      // A view from the URL: sorted by email, the data key n as a column (numbers right-aligned).
      await page.goto(`/app/projects/${projectId}/contacts?sort=email.asc&cols=n`);
      const table = page.getByRole('table', { name: 'Contacts' });
      await expect.poll(() => table.locator('tbody tr').count()).toBe(50);
      expect(await page.getByLabel('Sort').inputValue()).toBe('email.asc');
      expect(await table.locator('tbody tr').first().textContent()).toContain('c00@example.com');
      expect(await page.getByText('60 contacts', { exact: true }).count()).toBe(1);
      await table.getByRole('columnheader', { name: 'n', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Next' }).click();
      await page.waitForURL(/cursor=/);
      await expect.poll(() => table.locator('tbody tr').count()).toBe(10);
      expect(await table.locator('tbody tr').first().textContent()).toContain('c50@example.com');
      // The total is still known on a later page (asked for separately).
      expect(await page.getByText('60 contacts', { exact: true }).count()).toBe(1);
      await page.getByRole('button', { name: 'Previous' }).click();
      await page.waitForURL((u) => !u.search.includes('cursor='));
      await expect.poll(() => table.locator('tbody tr').count()).toBe(50);

      // Export with the current filter: the search narrows the file too.
      await page.getByLabel('Search').fill('c0');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(10);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
      expect(download.suggestedFilename()).toMatch(/^contacts-.*\.csv$/);
      const file = readFileSync(await download.path(), 'utf8').replace(/^\uFEFF/, '');
      const lines = file.trim().split(/\r?\n/);
      expect(lines[0]).toBe('email,subscribed,createdAt,n');
      expect(lines).toHaveLength(11);
      expect(lines.slice(1).every((l) => /^c0\d@example\.com,true,/.test(l))).toBe(true);

      // Select the page, then every matching contact beyond it, and delete them (the ids are collected page by page).
      await page.getByLabel('Search').fill('');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(50);
      await table.getByRole('checkbox', { name: 'Select all contacts on this page' }).click();
      await page.getByText('50 selected', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Select all 60 matching' }).click();
      await page.getByText('60 selected (all matching)').waitFor();
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const confirm = page.getByRole('dialog');
      await confirm.getByRole('heading', { name: 'Delete 60 contacts?' }).waitFor();
      await confirm.getByRole('button', { name: 'Delete contacts' }).click();
      await page.getByText('60 contacts deleted', { exact: true }).waitFor({ timeout: 20_000 });
      await page.getByText('No contacts yet').waitFor();
      expect((await apiGet<{ total: number }>(page, projectId, '/contacts?limit=1')).total).toBe(0);

      // A file without an email column is refused in the preview, before any upload.
      await page.getByRole('button', { name: 'Import CSV' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('CSV file').setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('name,plan\nAda,pro\n') });
      await expect.poll(() => dialog.getByRole('alert').textContent()).toBe('The header row has no email column (found: name, plan).');
      expect(await dialog.getByRole('button', { name: 'Import', exact: true }).isDisabled()).toBe(true);
      await dialog.getByRole('button', { name: 'Cancel' }).click();

      // An unknown contact's page says so.
      await page.goto(`/app/projects/${projectId}/contacts/00000000-0000-4000-8000-000000000000`);
      await page.getByText('No such contact').waitFor();
    } finally {
      await context.close();
    }
  }, 120_000);
});

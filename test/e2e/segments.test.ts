import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2E, seriousA11yViolations, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

async function secretKey(page: Page, projectId: string): Promise<string> {
  const projects = (await page.evaluate(() => fetch('/users/@me/projects').then((r) => r.json()))) as { id: string; secret: string | null }[];
  const secret = projects.find((p) => p.id === projectId)?.secret;
  if (!secret) throw new Error('no secret key');
  return secret;
}

async function apiCall(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${e.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const memberEmails = async (page: Page) =>
  (await page.getByRole('table', { name: 'Members' }).locator('tbody tr').allTextContents()).map((t) => /^\S+@example\.com/.exec(t)?.[0]).sort();

describe('dashboard: segments and the condition builder', () => {
  it('builds a segment with a nested any-of group, lists exactly its members, edits it and deletes it', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `seg-${Date.now()}@example.com`);
      const key = await secretKey(page, projectId);
      const contacts: [string, Record<string, string | number>][] = [
        ['ann@example.com', { plan: 'pro', country: 'DE', age: 30 }], // pro, DE
        ['bob@example.com', { plan: 'pro', country: 'FR', age: 50 }], // pro, over 40
        ['cid@example.com', { plan: 'pro', country: 'FR', age: 30 }], // pro, neither
        ['dan@example.com', { plan: 'free', country: 'DE', age: 60 }], // not pro
        ['eve@example.com', { plan: 'Pro', country: 'DE', age: 45 }], // equals is case-sensitive
        ['fay@example.com', { plan: 'pro', country: 'US', age: 41 }], // pro, over 40
      ];
      for (const [email, data] of contacts) expect((await apiCall(key, 'POST', '/contacts', { email, data })).status).toBe(201);
      expect((await apiCall(key, 'POST', '/events/track', { email: 'ann@example.com', event: 'purchase' })).status).toBe(200);
      await expect.poll(async () => JSON.stringify((await apiCall(key, 'GET', '/events/names')).json)).toContain('"purchase"');

      await page.goto(`/app/projects/${projectId}/segments`);
      await page.getByText('No segments yet').waitFor();
      await page.getByRole('link', { name: 'New segment' }).first().click();
      await page.waitForURL(/\/segments\/new$/);
      await page.getByLabel('Name').fill('Pro in DE or over 40');

      // The field list holds the data keys with their seen types, the events and email engagement.
      const first = page.getByRole('group', { name: 'Condition 1', exact: true });
      const field = first.getByLabel('Field');
      await expect.poll(async () => (await field.locator('option').allTextContents()).join('|')).toContain('plan · string');
      const options = (await field.locator('option').allTextContents()).join('|');
      expect(options).toContain('age · number');
      expect(options).toContain('purchase');
      expect(options).toContain('Email opened');
      await field.selectOption('data.plan');
      // A string key offers text operators, no numeric comparison.
      const ops = await first.getByLabel('Operator').locator('option').allTextContents();
      expect(ops).toContain('contains');
      expect(ops).not.toContain('is greater than');
      await first.getByLabel('Operator').selectOption('equals');
      await first.getByLabel('Value').fill('pro');
      // The live count follows the unsaved condition (POST /segments/count).
      const live = page.getByTestId('live-count');
      await expect.poll(() => live.textContent(), { timeout: 5000 }).toBe('4 matching contacts');

      await page.getByRole('button', { name: 'Add group to conditions' }).click();
      const group = page.getByRole('group', { name: 'Group 2', exact: true });
      await expect.poll(() => group.getByLabel('Group 2: match').inputValue()).toBe('OR');
      const country = group.getByRole('group', { name: 'Condition 2.1', exact: true });
      await country.getByLabel('Field').selectOption('data.country');
      await country.getByLabel('Value').fill('DE');
      await group.getByRole('button', { name: 'Add condition to group 2' }).click();
      const age = group.getByRole('group', { name: 'Condition 2.2', exact: true });
      await age.getByLabel('Field').selectOption('data.age');
      await age.getByLabel('Operator').selectOption('greaterThan');
      expect(await age.getByLabel('Value').getAttribute('type')).toBe('number');

      // An incomplete row blocks saving and says why, beside the row.
      await page.getByRole('button', { name: 'Create segment' }).click();
      await age.getByRole('alert').filter({ hasText: 'Enter a number' }).waitFor();
      expect(page.url()).toMatch(/\/segments\/new$/);
      await age.getByLabel('Value').fill('40');
      await expect.poll(() => live.textContent(), { timeout: 5000 }).toBe('3 matching contacts');
      expect(await seriousA11yViolations(page)).toEqual([]);
      await e.screenshot(page, 'segment-builder');

      await page.getByRole('button', { name: 'Create segment' }).click();
      await page.waitForURL(/\/segments\/[0-9a-f-]{36}$/);
      const segmentId = /\/segments\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';
      const stored = await apiCall(key, 'GET', `/segments/${segmentId}`);
      expect((stored.json as { condition: unknown }).condition).toEqual({
        logic: 'AND',
        groups: [
          {
            filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
            conditions: {
              logic: 'OR',
              groups: [{ filters: [{ field: 'data.country', operator: 'equals', value: 'DE' }] }, { filters: [{ field: 'data.age', operator: 'greaterThan', value: 40 }] }],
            },
          },
        ],
      });
      await expect.poll(() => page.getByTestId('member-count').textContent()).toBe('3');
      await expect.poll(() => memberEmails(page)).toEqual(['ann@example.com', 'bob@example.com', 'fay@example.com']);
      await page.getByText('3 members').waitFor();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await e.screenshot(page, 'segment');

      // The list: name, count, tracking.
      await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Segments' }).click();
      const row = page.getByRole('table', { name: 'Segments' }).getByRole('row').filter({ hasText: 'Pro in DE or over 40' });
      await expect.poll(() => row.textContent()).toMatch(/Dynamic3Not tracked/);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await e.screenshot(page, 'segments');

      // Editing: the stored tree comes back into the builder; dropping the age row leaves Ann.
      await row.getByRole('link', { name: 'Pro in DE or over 40' }).click();
      await page.getByRole('tab', { name: 'Condition and settings' }).click();
      await page.waitForURL(/tab=definition/);
      const save = page.getByRole('button', { name: 'Save changes' });
      expect(await save.isDisabled()).toBe(true);
      const editedAge = page.getByRole('group', { name: 'Condition 2.2', exact: true });
      expect(await editedAge.getByLabel('Value').inputValue()).toBe('40');
      await editedAge.getByRole('button', { name: 'Remove condition 2.2' }).click();
      await expect.poll(() => page.getByTestId('live-count').textContent(), { timeout: 5000 }).toBe('1 matching contact');
      expect(await seriousA11yViolations(page)).toEqual([]);
      // Unsaved: leaving asks first; the members tab keeps the edit.
      await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Segments' }).click();
      await page.getByRole('dialog', { name: 'Leave without saving?' }).getByRole('button', { name: 'Cancel' }).click();
      expect(page.url()).toMatch(/\/segments\/[0-9a-f-]{36}\?tab=definition$/);
      await page.getByRole('tab', { name: 'Members' }).click();
      await page.getByRole('tab', { name: 'Condition and settings' }).click();
      expect(await page.getByRole('group', { name: 'Condition 2.2', exact: true }).count()).toBe(0);
      await page.getByLabel('Track membership').click();
      await save.click();
      await expect.poll(() => page.getByTestId('member-count').textContent()).toBe('1');
      await page.getByRole('tab', { name: 'Members' }).click();
      await expect.poll(() => memberEmails(page)).toEqual(['ann@example.com']);
      const updated = (await apiCall(key, 'GET', `/segments/${segmentId}`)).json as { trackMembership: boolean; condition: { groups: { conditions: unknown }[] } };
      expect(updated.trackMembership).toBe(true);
      expect(updated.condition.groups[0]?.conditions).toEqual({ logic: 'OR', groups: [{ filters: [{ field: 'data.country', operator: 'equals', value: 'DE' }] }] });

      // Tracked: compute records the membership.
      await page.getByRole('button', { name: 'Compute now' }).click();
      await page.getByText('1 member: 1 entered, 0 left', { exact: true }).waitFor();

      // Duplicate: a new untracked segment with the same condition, opened on its definition.
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Duplicate' }).click();
      await page.waitForURL((url) => url.search === '?tab=definition' && !url.pathname.endsWith(segmentId));
      const copyId = /\/segments\/([0-9a-f-]{36})/.exec(page.url())?.[1] ?? '';
      const copy = (await apiCall(key, 'GET', `/segments/${copyId}`)).json as { name: string; trackMembership: boolean; condition: unknown; memberCount: number };
      expect(copy).toMatchObject({ name: 'Pro in DE or over 40 (copy)', trackMembership: false, condition: updated.condition, memberCount: 1 });
      // The URL changes before the transition to the copy's page renders (React Router navigates in a transition).
      await expect.poll(() => page.getByLabel('Name').inputValue()).toBe('Pro in DE or over 40 (copy)');
      expect((await apiCall(key, 'DELETE', `/segments/${copyId}`)).status).toBe(204);
      await page.goBack();
      await page.waitForURL((url) => url.pathname.endsWith(segmentId));

      // Delete, confirmed by a dialog naming the segment.
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Delete segment' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete “Pro in DE or over 40”?' });
      await dialog.getByRole('button', { name: 'Delete segment' }).click();
      await page.waitForURL(/\/segments$/);
      await page.getByText('No segments yet').waitFor();
      expect((await apiCall(key, 'GET', `/segments/${segmentId}`)).status).toBe(404);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('shows the API 422 beside the row it names (a segment reference the server refuses)', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `seg422-${Date.now()}@example.com`);
      const key = await secretKey(page, projectId);
      const a = (await apiCall(key, 'POST', '/segments', { name: 'A', condition: { logic: 'AND', groups: [] } })).json as { id: string };
      const b = (await apiCall(key, 'POST', '/segments', { name: 'B', condition: { logic: 'AND', groups: [{ filters: [{ field: `segment.${a.id}`, operator: 'memberOfSegment' }] }] } })).json as { id: string };
      // A references nothing yet; making it reference B would close a cycle: the server says 422.
      await page.goto(`/app/projects/${projectId}/segments/${a.id}?tab=definition`);
      const first = page.getByRole('group', { name: 'Conditions', exact: true });
      await first.getByRole('button', { name: 'Add condition to conditions' }).click();
      const ref = page.getByRole('group', { name: 'Condition 1', exact: true });
      await ref.getByLabel('Field').selectOption(`segment.${b.id}`);
      await page.getByRole('button', { name: 'Save changes' }).click();
      await expect.poll(() => ref.getByRole('alert').textContent()).toMatch(/cycle|itself|references/i);
      expect(await ref.getByLabel('Field').getAttribute('aria-invalid')).toBe('true');
    } finally {
      await context.close();
    }
  }, 60_000);

  it('creates a static segment, adds contacts by email and removes one', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `segstatic-${Date.now()}@example.com`);
      const key = await secretKey(page, projectId);
      for (const email of ['kim@example.com', 'lou@example.com']) expect((await apiCall(key, 'POST', '/contacts', { email })).status).toBe(201);
      await page.goto(`/app/projects/${projectId}/segments/new`);
      await page.getByRole('radio', { name: /Static/ }).check();
      expect(await page.getByRole('group', { name: 'Conditions', exact: true }).count()).toBe(0);
      await page.getByLabel('Name').fill('Beta testers');
      await page.getByRole('button', { name: 'Create segment' }).click();
      await page.waitForURL(/\/segments\/[0-9a-f-]{36}$/);
      await page.getByText('No members').waitFor();

      await page.getByRole('button', { name: 'Add contacts' }).first().click();
      const dialog = page.getByRole('dialog', { name: 'Add contacts to “Beta testers”' });
      await dialog.getByLabel('Emails', { exact: true }).fill('Kim@example.com, nobody@example.com\nnot-an-email');
      await dialog.getByText('Not email addresses: not-an-email').waitFor();
      expect(await dialog.getByRole('button', { name: /^Add 2 contacts$/ }).isDisabled()).toBe(true);
      await dialog.getByLabel('Emails', { exact: true }).fill('Kim@example.com, nobody@example.com\nlou@example.com');
      await dialog.getByRole('button', { name: 'Add 3 contacts' }).click();
      await page.getByText('2 contacts added, 1 email matches no contact', { exact: true }).waitFor();
      await expect.poll(() => memberEmails(page)).toEqual(['kim@example.com', 'lou@example.com']);
      await expect.poll(() => page.getByTestId('member-count').textContent()).toBe('2');

      await page.getByRole('button', { name: 'Remove kim@example.com from the segment' }).click();
      await page.getByRole('dialog', { name: 'Remove kim@example.com?' }).getByRole('button', { name: 'Remove from segment' }).click();
      await expect.poll(() => memberEmails(page)).toEqual(['lou@example.com']);
      // The dialog's clicks did not open the contact behind the row.
      expect(page.url()).toMatch(/\/segments\/[0-9a-f-]{36}$/);
      const segments = (await apiCall(key, 'GET', '/segments')).json as { name: string; type: string; memberCount: number }[];
      expect(segments.map((s) => [s.name, s.type, s.memberCount])).toEqual([['Beta testers', 'STATIC', 1]]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('pages the members in the URL (25 a page)', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `segpages-${Date.now()}@example.com`);
      const key = await secretKey(page, projectId);
      await Promise.all(Array.from({ length: 30 }, (_, i) => apiCall(key, 'POST', '/contacts', { email: `m${String(i).padStart(2, '0')}@example.com`, data: { batch: 'x' } })));
      await apiCall(key, 'POST', '/contacts', { email: 'other@example.com', data: { batch: 'y' } });
      const seg = (await apiCall(key, 'POST', '/segments', { name: 'Batch x', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.batch', operator: 'equals', value: 'x' }] }] } })).json as { id: string };
      await page.goto(`/app/projects/${projectId}/segments/${seg.id}`);
      await page.getByText('30 members · page 1 of 2').waitFor();
      const firstPage = await memberEmails(page);
      expect(firstPage).toHaveLength(25);
      await page.getByRole('button', { name: 'Next' }).click();
      await page.waitForURL(/[?&]page=2/);
      await page.getByText('30 members · page 2 of 2').waitFor();
      const secondPage = await memberEmails(page);
      expect(secondPage).toHaveLength(5);
      expect([...firstPage, ...secondPage].sort()).toEqual(Array.from({ length: 30 }, (_, i) => `m${String(i).padStart(2, '0')}@example.com`));
      expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
      await page.goBack();
      await page.getByText('30 members · page 1 of 2').waitFor();
    } finally {
      await context.close();
    }
  }, 60_000);
});

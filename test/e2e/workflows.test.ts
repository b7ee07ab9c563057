import { sql } from 'kysely';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { type E2E, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
/** expect.poll waits 1 s by default: the worker and the live lists need longer on a loaded machine. */
const POLL = { timeout: 15_000, interval: 200 };
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

interface Keys {
  id: string;
  public: string;
  secret: string;
}

/** The project's keys, read with the page's session (GET /users/@me/projects). */
async function projectKeys(page: Page, projectId: string): Promise<Keys> {
  const res = await page.request.get('/users/@me/projects');
  expect(res.status()).toBe(200);
  const body = (await res.json()) as { data?: Keys[] } | Keys[];
  const list = Array.isArray(body) ? body : (body.data ?? []);
  const project = list.find((p) => p.id === projectId);
  if (!project) throw new Error('project not listed');
  return project;
}

async function api<T>(keys: Keys, path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${e.base}${path}`, { ...init, headers: { authorization: `Bearer ${keys.secret}`, ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers } });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

interface Detail {
  id: string;
  enabled: boolean;
  steps: { id: string; type: string; name: string; config: Record<string, unknown>; position: { x: number; y: number } }[];
  transitions: { id: string; fromStepId: string; toStepId: string; branch: string | null }[];
}

/**
 * Marks a domain and the project owner's email verified in the server's database (as the operator
 * CLI's verify-domain does; no DNS here), so the project can have templates. The harness keeps the
 * database name to itself: the e2e database holding the domain is looked up.
 */
async function verifySender(domainId: string, ownerEmail: string): Promise<void> {
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
      const { rows } = await sql<{ ok: number }>`SELECT 1 AS ok FROM domains WHERE id = ${domainId}::uuid`.execute(db.db);
      if (rows.length === 0) continue;
      await sql`UPDATE domains SET verified = true, verified_at = now() WHERE id = ${domainId}::uuid`.execute(db.db);
      await sql`UPDATE users SET email_verified_at = now() WHERE email = ${ownerEmail} AND email_verified_at IS NULL`.execute(db.db);
      return;
    } catch {
      // Another test file's database being dropped or not migrated yet: not ours.
    } finally {
      await db.close();
    }
  }
  throw new Error(`no e2e database holds domain ${domainId}`);
}

/** Opens the "+" of a slot or an edge, picks a type and fills the dialog through `fill`. */
async function addStep(page: Page, plus: string, type: string, name: string, fill: (dialog: ReturnType<Page['getByRole']>) => Promise<void>) {
  const dialog = page.getByRole('dialog', { name: 'Add a step' });
  // The canvas lays itself out again when the previous step's refetch lands: a click during that
  // move can miss the "+" (CI, 1 run in ~10). Clicked again, at most three times, until the dialog opens.
  for (let attempt = 1; ; attempt++) {
    await page.getByRole('button', { name: plus, exact: true }).click();
    try {
      await dialog.waitFor({ timeout: 3_000 });
      break;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
  await dialog.getByText(type, { exact: true }).click();
  await dialog.getByLabel('Step name').fill(name);
  await fill(dialog);
  await dialog.getByRole('button', { name: 'Add step' }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.getByRole('group', { name: new RegExp(`step ${name.replace(/[?.*+()]/g, '\\$&')}$`) }).waitFor();
}

/**
 * The node's box once it stopped moving: the canvas fits the view after loading and after each
 * insert (a short animation), and a click during it can land beside the node.
 */
async function whenStill(node: Locator): Promise<{ x: number; y: number; width: number; height: number }> {
  let box = await node.boundingBox();
  for (let i = 0; i < 50; i++) {
    await node.page().waitForTimeout(100);
    const next = await node.boundingBox();
    if (box && next && Math.abs(next.x - box.x) < 0.5 && Math.abs(next.y - box.y) < 0.5) return next;
    box = next;
  }
  if (!box) throw new Error('no node box');
  return box;
}

describe('dashboard: workflows', () => {
  it('builds a branching workflow on the canvas, enables it, and shows the execution of a tracked event', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `wf-${Date.now()}@example.com`);
      const keys = await projectKeys(page, projectId);
      expect(keys.public).toMatch(/^pk_/);

      await page.goto(`/app/projects/${projectId}/workflows`);
      await page.getByText('No workflows yet').waitFor();
      await page.getByRole('button', { name: 'New workflow' }).first().click();
      const create = page.getByRole('dialog', { name: 'New workflow' });
      await create.getByLabel('Name').fill('Onboarding');
      await create.getByLabel('Trigger event').fill('signup');
      await create.getByRole('button', { name: 'Create workflow' }).click();
      await page.waitForURL(/\/workflows\/[0-9a-f-]{36}$/);
      const workflowId = /\/workflows\/([0-9a-f-]{36})$/.exec(page.url())?.[1] ?? '';

      // The new workflow: the trigger, and a "+" under it.
      await page.getByRole('group', { name: 'Trigger step Trigger' }).waitFor();
      // The condition builder: an event data key typed by hand (the trigger was never tracked, so
      // none is listed) and a contact field, in one "All of" group.
      await addStep(page, 'Add a step after Trigger', 'Condition', 'Is pro?', async (d) => {
        const first = d.getByRole('group', { name: 'Condition 1' });
        await first.getByLabel('Field').selectOption({ label: 'Other event key…' });
        await first.getByLabel('Event key').fill('plan');
        expect(await first.getByLabel('Operator').inputValue()).toBe('equals');
        await first.getByLabel('Value', { exact: true }).fill('pro');
        await d.getByRole('button', { name: 'Add condition to conditions' }).click();
        const second = d.getByRole('group', { name: 'Condition 2' });
        // An incomplete row is refused beside it, before any request.
        await d.getByRole('button', { name: 'Add step' }).click();
        await expect.poll(() => second.getByRole('alert').textContent(), POLL).toBe('Choose a field');
        await second.getByLabel('Field').selectOption('email');
        await second.getByLabel('Operator').selectOption('contains');
        await second.getByLabel('Value', { exact: true }).fill('@example.com');
        await expect.poll(() => second.getByRole('alert').count(), POLL).toBe(0);
      });
      // Two branches, each with its "+".
      await addStep(page, 'Add a step after Is pro? (Yes)', 'Update contact', 'Mark gold', async (d) => {
        await d.getByLabel('Data to set').fill('tier = gold');
      });
      await addStep(page, 'Add a step after Is pro? (No)', 'Update contact', 'Mark free', async (d) => {
        await d.getByLabel('Data to set').fill('tier = free');
      });
      // A step inserted on an edge: the transition is replaced by two, in one request (no
      // separate transition calls).
      const graphCalls: string[] = [];
      const onRequest = (r: { method: () => string; url: () => string }) => {
        if (/\/workflows\/[0-9a-f-]{36}\/(steps|transitions)/.test(r.url()) && r.method() !== 'GET') graphCalls.push(`${r.method()} ${new URL(r.url()).pathname.replace(/[0-9a-f-]{36}/g, ':id')}`);
      };
      page.on('request', onRequest);
      await addStep(page, 'Insert a step between Trigger and Is pro?', 'Update contact', 'Note source', async (d) => {
        await d.getByLabel('Data to set').fill('source = e2e');
      });
      page.off('request', onRequest);
      expect(graphCalls).toEqual(['POST /workflows/:id/steps']);
      // The branch labels are on the edges.
      await expect.poll(() => page.locator('.react-flow__edgelabel-renderer').textContent(), POLL).toMatch(/Yes.*No|No.*Yes/);

      let detail = await api<Detail>(keys, `/workflows/${workflowId}`);
      const byName = (n: string) => detail.steps.find((s) => s.name === n)?.id;
      const edge = (from: string, to: string) => detail.transitions.find((t) => t.fromStepId === byName(from) && t.toStepId === byName(to));
      expect(detail.steps.map((s) => s.type).sort()).toEqual(['CONDITION', 'TRIGGER', 'UPDATE_CONTACT', 'UPDATE_CONTACT', 'UPDATE_CONTACT']);
      expect(edge('Trigger', 'Note source')?.branch).toBeNull();
      expect(edge('Note source', 'Is pro?')?.branch).toBeNull();
      expect(edge('Trigger', 'Is pro?')).toBeUndefined();
      expect(edge('Is pro?', 'Mark gold')?.branch).toBe('yes');
      expect(edge('Is pro?', 'Mark free')?.branch).toBe('no');
      expect(detail.steps.find((s) => s.name === 'Is pro?')?.config).toEqual({
        condition: {
          logic: 'AND',
          groups: [
            {
              filters: [
                { field: 'event.plan', operator: 'equals', value: 'pro' },
                { field: 'email', operator: 'contains', value: '@example.com' },
              ],
            },
          ],
        },
      });

      // The side panel edits a step; the API's 422 shows next to the field.
      const markFree = page.getByRole('group', { name: 'Update contact step Mark free' });
      await whenStill(markFree);
      await markFree.click();
      const panel = page.getByRole('complementary', { name: 'Step Mark free' });
      await panel.getByLabel('Data to set').fill('tier = free\nemail = x');
      await panel.getByRole('button', { name: 'Save step' }).click();
      const data = panel.getByLabel('Data to set');
      await expect.poll(() => data.getAttribute('aria-invalid'), POLL).toBe('true');
      expect(await panel.getByRole('alert').first().textContent()).toMatch(/email.*reserved/);
      await panel.getByLabel('Data to set').fill('tier = free');
      await panel.getByRole('button', { name: 'Save step' }).click();
      await expect.poll(() => data.getAttribute('aria-invalid'), POLL).toBeNull();

      // Dragging a step stores its position; the others stay laid out.
      const node = page.getByRole('group', { name: 'Update contact step Mark gold' });
      const box = await whenStill(node);
      await page.mouse.move(box.x + 40, box.y + 10);
      await page.mouse.down();
      await page.mouse.move(box.x + 160, box.y + 30, { steps: 8 });
      await page.mouse.up();
      await expect
        .poll(async () => {
          detail = await api<Detail>(keys, `/workflows/${workflowId}`);
          return detail.steps.find((s) => s.name === 'Mark gold')?.position.x ?? 0;
        }, POLL)
        .not.toBe(0);


      // Enable, with a confirmation naming the trigger.
      await page.getByRole('switch', { name: 'Enable the workflow' }).click();
      const confirm = page.getByRole('dialog', { name: 'Enable Onboarding?' });
      expect(await confirm.textContent()).toContain('signup');
      await confirm.getByRole('button', { name: 'Enable workflow' }).click();
      await page.getByRole('switch', { name: 'Disable the workflow' }).waitFor();
      expect((await api<Detail>(keys, `/workflows/${workflowId}`)).enabled).toBe(true);

      // Track the event with the public key.
      const track = await fetch(`${e.base}/v1/track`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.public}`, 'content-type': 'application/json' },
        body: JSON.stringify({ event: 'signup', email: 'pro@example.com', data: { plan: 'pro' } }),
      });
      expect(track.status).toBeLessThan(300);

      // The executions page: the run completes, its timeline shows the yes branch.
      await page.getByRole('link', { name: 'Executions' }).click();
      await page.waitForURL(/\/executions$/);
      const row = page.getByRole('row', { name: /pro@example\.com/ });
      await expect.poll(() => row.textContent(), { timeout: 30_000 }).toContain('Completed');
      await row.getByRole('button', { name: 'pro@example.com' }).click();
      const timeline = page.getByRole('complementary', { name: 'Execution timeline' });
      const steps = timeline.getByRole('list', { name: 'Steps' }).getByRole('listitem');
      await expect.poll(() => steps.count(), POLL).toBe(4);
      expect(await steps.allTextContents()).toEqual([
        expect.stringMatching(/Trigger.*Completed/),
        expect.stringMatching(/Note source.*Completed/),
        expect.stringMatching(/Is pro\?.*Completed.*→ Yes/),
        expect.stringMatching(/Mark gold.*Completed/),
      ]);
      expect(new URL(page.url()).searchParams.get('execution')).toMatch(/^[0-9a-f-]{36}$/);
      const contacts = await api<{ data: { email: string; data: Record<string, unknown> }[] }>(keys, '/contacts?search=pro%40example.com');
      expect(contacts.data[0]?.data).toMatchObject({ tier: 'gold', source: 'e2e' });

      // The per-step counters on the canvas.
      await page.goto(`/app/projects/${projectId}/workflows/${workflowId}`);
      const gold = page.getByRole('group', { name: 'Update contact step Mark gold' });
      await expect.poll(() => gold.getByLabel('Step counters').textContent(), POLL).toMatch(/^1entered0waiting1done0failed$/);
      await expect.poll(() => page.getByRole('group', { name: 'Update contact step Mark free' }).getByLabel('Step counters').textContent(), POLL).toMatch(/^0entered/);
      // The dragged step kept its place after the reload (stored, not laid out again).
      expect(detail.steps.find((s) => s.name === 'Mark gold')?.position.x).not.toBe(0);
      // Keyboard: focus the step's node and press Enter to open its panel.
      await page.locator('.react-flow__node', { has: page.getByRole('group', { name: 'Condition step Is pro?' }) }).focus();
      await page.keyboard.press('Enter');
      const condPanel = page.getByRole('complementary', { name: 'Step Is pro?' });
      await condPanel.waitFor();
      // The stored tree opens in the builder, row by row; `plan` is now a key seen on the tracked
      // signup events (GET /workflows/fields), so it is listed rather than typed.
      const firstRow = condPanel.getByRole('group', { name: 'Condition 1' });
      await expect.poll(() => firstRow.getByLabel('Field').inputValue(), POLL).toBe('event.plan');
      expect(await firstRow.getByLabel('Field').locator('option:checked').textContent()).toBe('plan · string');
      expect(await condPanel.getByRole('group', { name: 'Condition 2' }).getByLabel('Field').inputValue()).toBe('email');
      await page.waitForTimeout(300);
      await e.screenshot(page, 'workflow-editor');
      // The dark theme: the canvas follows the app's switch (the class on <html>).
      await page.evaluate(() => document.documentElement.classList.add('dark'));
      await expect.poll(() => page.locator('.react-flow').getAttribute('class'), POLL).toContain('dark');
      await e.screenshot(page, 'workflow-editor-dark');
      await page.evaluate(() => document.documentElement.classList.remove('dark'));

      // The list: enabled, counts; then a screenshot.
      await page.goto(`/app/projects/${projectId}/workflows`);
      const listRow = page.getByRole('row', { name: /Onboarding/ });
      await expect.poll(() => listRow.textContent(), POLL).toMatch(/signup.*Enabled.*5.*1.*0/);
      await e.screenshot(page, 'workflows');
    } finally {
      await context.close();
    }
  }, 180_000);

  it('refuses to enable an unrunnable workflow, starts one for a contact by hand, cancels it, deletes and adds steps, duplicates and deletes a workflow', async () => {
    const { context, page } = await e.newPage();
    try {
      const owner = `wf2-${Date.now()}@example.com`;
      const projectId = await signUpAndCreateProject(page, owner);
      const keys = await projectKeys(page, projectId);
      // A workflow built through the API: TRIGGER → WAIT_FOR_EVENT (stays WAITING).
      const wf = await api<{ id: string }>(keys, '/workflows', { method: 'POST', body: JSON.stringify({ name: 'Waiter', eventName: 'ping' }) });
      const detail = await api<Detail>(keys, `/workflows/${wf.id}`);
      const trigger = detail.steps[0]?.id ?? '';
      const wait = await api<{ id: string }>(keys, `/workflows/${wf.id}/steps`, { method: 'POST', body: JSON.stringify({ type: 'WAIT_FOR_EVENT', name: 'Wait for pong', config: { eventName: 'pong' } }) });
      await api(keys, `/workflows/${wf.id}/transitions`, { method: 'POST', body: JSON.stringify({ fromStepId: trigger, toStepId: wait.id }) });
      await api(keys, `/workflows/${wf.id}`, { method: 'PATCH', body: JSON.stringify({ enabled: true }) });
      await api(keys, '/contacts', { method: 'POST', body: JSON.stringify({ email: 'ann@example.com' }) });

      // Enabling a workflow that cannot run: the API's 422 is listed in the confirmation, the switch stays off.
      const empty = await api<{ id: string }>(keys, '/workflows', { method: 'POST', body: JSON.stringify({ name: 'Empty', eventName: 'never' }) });
      await page.goto(`/app/projects/${projectId}/workflows/${empty.id}`);
      await page.getByRole('switch', { name: 'Enable the workflow' }).click();
      const refuse = page.getByRole('dialog', { name: 'Enable Empty?' });
      await refuse.getByRole('button', { name: 'Enable workflow' }).click();
      await expect.poll(() => refuse.getByRole('alert').textContent(), POLL).toMatch(/Trigger/);
      await refuse.getByRole('button', { name: 'Cancel' }).click();
      expect((await api<Detail>(keys, `/workflows/${empty.id}`)).enabled).toBe(false);
      await api(keys, `/workflows/${empty.id}`, { method: 'DELETE' });

      await page.goto(`/app/projects/${projectId}/workflows/${wf.id}/executions`);
      await page.getByText('No executions yet').waitFor();
      // An unknown contact: the API's 404, shown in the dialog.
      await page.getByRole('button', { name: 'Start for a contact' }).first().click();
      const start = page.getByRole('dialog', { name: 'Start for a contact' });
      await start.getByLabel('Contact email').fill('nobody@example.com');
      await start.getByRole('button', { name: 'Start' }).click();
      await start.getByRole('alert').waitFor();
      // The picker suggests matching contacts.
      await start.getByLabel('Contact email').fill('ann');
      await expect.poll(() => start.locator('datalist option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)), POLL).toEqual(['ann@example.com']);
      await start.getByLabel('Contact email').fill('ann@example.com');
      await start.getByRole('button', { name: 'Start' }).click();
      await start.waitFor({ state: 'detached' });
      const row = page.getByRole('row', { name: /ann@example\.com/ });
      await expect.poll(() => row.textContent(), POLL).toMatch(/Waiting.*Wait for pong/);
      const timeline = page.getByRole('complementary', { name: 'Execution timeline' });
      await expect.poll(() => timeline.textContent(), POLL).toContain('Wait for pong');
      await e.screenshot(page, 'workflow-executions');

      // Cancel it, with a confirmation.
      await row.getByRole('button', { name: 'Cancel the execution for ann@example.com' }).click();
      await page.getByRole('dialog', { name: 'Cancel this execution?' }).getByRole('button', { name: 'Cancel execution' }).click();
      await expect.poll(() => row.textContent(), POLL).toContain('Cancelled');
      // The status filter lives in the URL.
      await page.getByLabel('Status').selectOption('WAITING');
      await page.getByText('No execution with this status').waitFor();
      expect(new URL(page.url()).searchParams.get('status')).toBe('WAITING');

      // Cancel all: a second run, then every active one cancelled.
      await api(keys, `/workflows/${wf.id}/executions`, { method: 'POST', body: JSON.stringify({ email: 'bob@example.com' }) }).catch(async () => {
        await api(keys, '/contacts', { method: 'POST', body: JSON.stringify({ email: 'bob@example.com' }) });
        await api(keys, `/workflows/${wf.id}/executions`, { method: 'POST', body: JSON.stringify({ email: 'bob@example.com' }) });
      });
      await page.getByLabel('Status').selectOption('');
      await expect.poll(() => page.getByRole('row', { name: /bob@example\.com/ }).textContent(), POLL).toContain('Waiting');
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Cancel all active executions' }).click();
      await page.getByRole('dialog', { name: 'Cancel every active execution?' }).getByRole('button', { name: 'Cancel all executions' }).click();
      await expect.poll(() => page.getByRole('row', { name: /bob@example\.com/ }).textContent(), POLL).toContain('Cancelled');

      // Delete a step from its panel, after confirming: the trigger becomes a leaf with its "+".
      await page.goto(`/app/projects/${projectId}/workflows/${wf.id}`);
      const waitStep = page.getByRole('group', { name: 'Wait for event step Wait for pong' });
      await whenStill(waitStep);
      await waitStep.click();
      await page.getByRole('complementary', { name: 'Step Wait for pong' }).getByRole('button', { name: 'Delete step' }).click();
      await page.getByRole('dialog', { name: 'Delete Wait for pong?' }).getByRole('button', { name: 'Delete step' }).click();
      await page.getByRole('button', { name: 'Add a step after Trigger', exact: true }).waitFor();
      expect((await api<Detail>(keys, `/workflows/${wf.id}`)).steps.map((st) => st.type)).toEqual(['TRIGGER']);

      // A SEND_EMAIL step: its template is picked from the project's; none picked is refused by the form.
      const domainName = `wf${Date.now().toString(36)}.example.com`;
      const domain = await api<{ id: string }>(keys, '/domains', { method: 'POST', body: JSON.stringify({ domain: domainName }) });
      await verifySender(domain.id, owner);
      await api(keys, '/templates', { method: 'POST', body: JSON.stringify({ name: 'Welcome', subject: 'Hi there', body: '<p>Hi</p>', from: `hello@${domainName}` }) });
      await page.getByRole('button', { name: 'Add a step after Trigger', exact: true }).click();
      const add = page.getByRole('dialog', { name: 'Add a step' });
      await add.getByText('Send email', { exact: true }).click();
      await add.getByRole('button', { name: 'Add step' }).click();
      await expect.poll(() => add.getByLabel('Template', { exact: true }).getAttribute('aria-invalid'), POLL).toBe('true');
      await expect.poll(() => add.getByLabel('Template', { exact: true }).locator('option').allTextContents(), POLL).toContain('Welcome — Hi there');
      await add.getByLabel('Template', { exact: true }).selectOption({ label: 'Welcome — Hi there' });
      // Re-checked as the user types after the first submit: the error goes once a template is picked.
      await expect.poll(() => add.getByLabel('Template', { exact: true }).getAttribute('aria-invalid'), POLL).toBeNull();
      await add.getByRole('button', { name: 'Add step' }).click();
      await add.waitFor({ state: 'detached' });
      await expect.poll(() => page.getByRole('group', { name: 'Send email step Send email' }).textContent(), POLL).toContain('“Welcome”');

      // A condition on a segment deleted meanwhile: the API's 422 (config.field of the single-filter
      // form) shows beside the row; nothing is added until the row is fixed.
      const seg = await api<{ id: string }>(keys, '/segments', { method: 'POST', body: JSON.stringify({ name: 'Gone soon', condition: { logic: 'AND', groups: [] } }) });
      await page.getByRole('button', { name: 'Add a step after Send email', exact: true }).click();
      const cond = page.getByRole('dialog', { name: 'Add a step' });
      await cond.getByText('Condition', { exact: true }).click();
      await cond.getByLabel('Step name').fill('In segment?');
      const segRow = cond.getByRole('group', { name: 'Condition 1' });
      await expect.poll(() => segRow.getByLabel('Field').locator('option').allTextContents(), POLL).toContain('Gone soon');
      await segRow.getByLabel('Field').selectOption({ label: 'Gone soon' });
      await api(keys, `/segments/${seg.id}`, { method: 'DELETE' });
      await cond.getByRole('button', { name: 'Add step' }).click();
      await expect.poll(() => segRow.getByRole('alert').textContent(), POLL).toMatch(/not found/);
      expect(await segRow.getByLabel('Field').getAttribute('aria-invalid')).toBe('true');
      expect((await api<Detail>(keys, `/workflows/${wf.id}`)).steps.map((st) => st.type).sort()).toEqual(['SEND_EMAIL', 'TRIGGER']);
      await segRow.getByLabel('Field').selectOption('subscribed');
      await cond.getByRole('button', { name: 'Add step' }).click();
      await cond.waitFor({ state: 'detached' });
      const afterSend = await api<Detail>(keys, `/workflows/${wf.id}`);
      const inSegment = afterSend.steps.find((st) => st.name === 'In segment?');
      expect(inSegment?.config).toEqual({ field: 'subscribed', operator: 'equals', value: true });
      expect(afterSend.transitions.find((tr) => tr.toStepId === inSegment?.id)?.fromStepId).toBe(afterSend.steps.find((st) => st.type === 'SEND_EMAIL')?.id);

      // Duplicate, then delete the copy after confirming.
      await page.goto(`/app/projects/${projectId}/workflows`);
      await page.getByRole('button', { name: 'Actions for Waiter' }).click();
      await page.getByRole('menuitem', { name: 'Duplicate' }).click();
      const copy = page.getByRole('row', { name: /Waiter \(Copy\)/ });
      await expect.poll(() => copy.textContent(), POLL).toContain('Disabled');
      await copy.getByRole('button', { name: 'Actions for Waiter (Copy)' }).click();
      await page.getByRole('menuitem', { name: 'Delete' }).click();
      const confirmDelete = page.getByRole('dialog', { name: 'Delete Waiter (Copy)?' });
      expect(await confirmDelete.textContent()).toContain('Its 3 steps and the history of its 0 executions are deleted');
      await confirmDelete.getByRole('button', { name: 'Delete workflow' }).click();
      await confirmDelete.waitFor({ state: 'detached' });
      await expect.poll(() => copy.count(), POLL).toBe(0);
      const list = await api<{ data: { name: string }[] }>(keys, '/workflows');
      expect(list.data.map((w) => w.name)).toEqual(['Waiter']);
      // The same from the editor's "…" menu: the copy opens; deleting it returns to the list.
      await page.goto(`/app/projects/${projectId}/workflows/${wf.id}`);
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Duplicate' }).click();
      await page.waitForURL((url) => /\/workflows\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(wf.id));
      await page.getByRole('heading', { name: 'Waiter (Copy)' }).waitFor();
      await page.getByRole('button', { name: 'More actions' }).click();
      await page.getByRole('menuitem', { name: 'Delete workflow' }).click();
      await page.getByRole('dialog', { name: 'Delete Waiter (Copy)?' }).getByRole('button', { name: 'Delete workflow' }).click();
      await page.waitForURL((url) => url.pathname.endsWith('/workflows'));
      expect((await api<{ data: { name: string }[] }>(keys, '/workflows')).data.map((w) => w.name)).toEqual(['Waiter']);

      // Sorting by name is in the URL and on the server: the copy (deleted) gone, one row left.
      await page.getByRole('button', { name: 'Name' }).click();
      await expect.poll(() => new URL(page.url()).searchParams.get('sort'), POLL).toBe('name');
      expect(new URL(page.url()).searchParams.get('dir')).toBe('asc');
      // Search is in the URL.
      await page.getByLabel('Search workflows').fill('nothing-like-it');
      await page.getByText('No workflow matches').waitFor();
      expect(new URL(page.url()).searchParams.get('search')).toBe('nothing-like-it');
    } finally {
      await context.close();
    }
  }, 180_000);
});

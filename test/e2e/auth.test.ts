import http from 'node:http';
import { brotliDecompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2E, seriousA11yViolations, signUpAndCreateProject, startE2E } from './harness.js';

let e: E2E;
beforeAll(async () => {
  e = await startE2E();
}, 120_000);
afterAll(async () => {
  await e?.close();
});

/** A GET with exactly these headers, its body as sent (fetch would decompress it). */
function request(url: string, headers: Record<string, string>): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

describe('dashboard: accounts and projects in a real browser', () => {
  it('serves the app at /app, redirects / there, and sends a signed-out visitor to sign-in and back afterwards', async () => {
    const root = await fetch(`${e.base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/app/');
    // The app's script, compressed at build time, is sent in the encoding the browser accepts.
    const html = await (await fetch(`${e.base}/app/`)).text();
    const script = /src="(\/app\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const plain = await request(`${e.base}${script}`, {});
    const br = await request(`${e.base}${script}`, { 'accept-encoding': 'br, gzip' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toMatch(/accept-encoding/i);
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(br.body.length).toBeLessThan(plain.body.length / 2);
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    const { context, page } = await e.newPage();
    try {
      await page.goto('/app/projects/00000000-0000-0000-0000-000000000000/contacts?search=x');
      await page.waitForURL(/\/app\/login\?next=/);
      expect(decodeURIComponent(new URL(page.url()).searchParams.get('next') ?? '')).toBe('/projects/00000000-0000-0000-0000-000000000000/contacts?search=x');
      await e.screenshot(page, 'login');
      expect(await seriousA11yViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('signs up, creates a first project, switches to a second one, signs out and in again', async () => {
    const { context, page } = await e.newPage();
    try {
      const email = `owner-${Date.now()}@example.com`;
      const first = await signUpAndCreateProject(page, email, 'Acme');
      await expect.poll(() => page.getByRole('button', { name: 'Switch project' }).textContent()).toContain('Acme');
      expect(await seriousA11yViolations(page)).toEqual([]);

      await page.getByRole('button', { name: 'Switch project' }).click();
      await page.getByRole('menuitem', { name: 'New project' }).click();
      await page.getByRole('dialog').getByLabel('Project name').fill('Beta');
      await page.getByRole('dialog').getByRole('button', { name: 'Create project' }).click();
      await page.waitForURL((url) => url.pathname.startsWith('/app/projects/') && !url.pathname.includes(first));
      await expect.poll(() => page.getByRole('button', { name: 'Switch project' }).textContent()).toContain('Beta');

      await page.getByRole('button', { name: 'Account menu' }).click();
      await page.getByRole('menuitem', { name: 'Sign out' }).click();
      await page.waitForURL(/\/app\/login/);

      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('wrong-password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/password/i);
      await page.getByLabel('Password').fill('a-long-password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      // The last project opened comes back.
      await page.waitForURL((url) => url.pathname.startsWith('/app/projects/') && !url.pathname.includes(first));
    } finally {
      await context.close();
    }
  });

  it('jumps to a page and to a contact found by email from the command palette (Ctrl K)', async () => {
    const { context, page } = await e.newPage();
    try {
      const projectId = await signUpAndCreateProject(page, `palette-${Date.now()}@example.com`, 'Palette');
      const created = await page.evaluate(
        async (id) =>
          (await fetch('/contacts', { method: 'POST', headers: { 'content-type': 'application/json', 'x-project-id': id }, body: JSON.stringify({ email: 'zoe.palette@example.com' }) })).status,
        projectId,
      );
      expect(created).toBe(201);
      await page.keyboard.press('Control+k');
      const palette = page.getByRole('dialog');
      await palette.getByRole('combobox').fill('segm');
      await palette.getByRole('option', { name: 'Segments' }).click();
      await page.waitForURL(new RegExp(`/app/projects/${projectId}/segments$`));
      await page.getByRole('button', { name: /Search/ }).click();
      await palette.getByRole('combobox').fill('zoe.pal');
      await palette.getByRole('option', { name: /zoe\.palette@example\.com/ }).click();
      await page.waitForURL(new RegExp(`/app/projects/${projectId}/contacts/[0-9a-f-]{36}$`));
    } finally {
      await context.close();
    }
  });

  it('shows the 422 field error of the API next to the field', async () => {
    const { context, page } = await e.newPage();
    try {
      await page.goto('/app/signup');
      await page.getByLabel('Email').fill(`short-${Date.now()}@example.com`);
      await page.getByLabel('Password').fill('short');
      // The browser's own minlength check is bypassed to see the server's answer.
      await page.locator('form').evaluate((f) => f.setAttribute('novalidate', ''));
      await page.getByRole('button', { name: 'Create account' }).click();
      const password = page.getByLabel('Password');
      await expect.poll(() => password.getAttribute('aria-invalid')).toBe('true');
      const describedBy = await password.getAttribute('aria-describedby');
      expect(await page.locator(`[id="${describedBy}"]`).textContent()).toMatch(/8/);
    } finally {
      await context.close();
    }
  });
});

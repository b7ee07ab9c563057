import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { inject } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { freePort, PROJECT_ROOT, type ServerProcess, startServer } from '../helpers/process.js';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.js';
import { launchChromium } from './browser.js';

/**
 * Where the tests write their screenshots: the README's (docs/screenshots) with
 * UPDATE_SCREENSHOTS=1, else a temp folder, so that a test run leaves the work tree as it was.
 */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs', 'screenshots') : path.join(tmpdir(), 'mailplatform-screenshots');

export interface E2E {
  /** http://127.0.0.1:<port> of the real server (API, worker and dashboard in one process, as `npm start`). */
  base: string;
  server: ServerProcess;
  /** The server's own database (for a test to stage what the UI cannot, e.g. a verified domain). */
  databaseUrl: string;
  sink: SmtpSink;
  browser: Browser;
  /** A new browser context (own cookies) and its page, at the dashboard's size. */
  newPage(): Promise<{ context: BrowserContext; page: Page }>;
  /** A PNG of the page into SCREENSHOTS/<name>.png. */
  screenshot(page: Page, name: string): Promise<void>;
  close(): Promise<void>;
}

function databaseUrl(name: string): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The real server (`src/server.ts`, ROLE=all: API, worker, dashboard) on a database of its own on
 * the tests' PostgreSQL (migrated by the server at start), delivering to a real SMTP sink, and a
 * headless Chromium. One per test file.
 */
export async function startE2E(env: Record<string, string> = {}): Promise<E2E> {
  const name = `mp_e2e_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = connect(inject('databaseUrl'), { max: 1 });
  try {
    await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.db);
  } finally {
    await admin.close();
  }
  const [sink, browser, port] = await Promise.all([startSmtpSink(), launchChromium(), freePort()]);
  const base = `http://127.0.0.1:${port}`;
  const server = startServer({
    PORT: String(port),
    PUBLIC_URL: base,
    DATABASE_URL: databaseUrl(name),
    SMTP_URL: sink.url,
    SECRET: 'e2e-secret-0123456789abcdefghijklmnopqrstuvwxyz',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000',
    SIGNIN_RATE_LIMIT_PER_MINUTE: '10000',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // A build of one's own (`vite build --outDir …`), so that builds beside the tests do not swap the files under them.
    ...(process.env.E2E_DASHBOARD_DIST ? { DASHBOARD_DIST: process.env.E2E_DASHBOARD_DIST } : {}),
    ...env,
  });
  await server.waitForHealth(60_000);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    base,
    server,
    databaseUrl: databaseUrl(name),
    sink,
    browser,
    async newPage() {
      const context = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 800 }, timezoneId: 'UTC', locale: 'en-US' });
      // Under the test's own timeout, so a stuck step names itself.
      context.setDefaultTimeout(10_000);
      return { context, page: await context.newPage() };
    },
    async screenshot(page, file) {
      await page.screenshot({ path: path.join(SCREENSHOTS, `${file}.png`) });
    },
    async close() {
      await browser.close();
      server.child.kill('SIGTERM');
      await server.waitForExit(20_000);
      await sink.close();
      const cleanup = connect(inject('databaseUrl'), { max: 1 });
      try {
        await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(cleanup.db);
      } finally {
        await cleanup.close();
      }
    },
  };
}

/** Signs up through the dashboard's form and creates a first project; returns its id. */
export async function signUpAndCreateProject(page: Page, email: string, projectName = 'Acme'): Promise<string> {
  await page.goto('/app/signup');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('a-long-password');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByLabel('Project name').fill(projectName);
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(/\/app\/projects\/[0-9a-f-]{36}/);
  const id = /\/app\/projects\/([0-9a-f-]{36})/.exec(page.url())?.[1];
  if (!id) throw new Error(`no project id in ${page.url()}`);
  return id;
}

/** One violation axe-core found, as the a11y checks report it. */
export interface A11yViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core (the npm package's own script, evaluated in the page) on the page as it is and
 * returns the violations of impact `serious` or `critical` (WCAG 2 A/AA rules).
 */
export async function seriousA11yViolations(page: Page): Promise<A11yViolation[]> {
  const source = readFileSync(path.join(PROJECT_ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
  // Evaluated through the DevTools protocol, which the page's CSP (script-src 'self') does not govern.
  await page.evaluate(source);
  const violations = await page.evaluate(async () => {
    // Colours mid-transition (a theme switched, a button hovered) are not the page's colours.
    for (const animation of document.getAnimations()) {
      if (animation.effect?.getComputedTiming().endTime !== Infinity) animation.finish();
    }
    interface AxeResult {
      violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
    }
    const axe = (globalThis as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<AxeResult> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A page's link in the sidebar (exact name: "Contacts", not Home's "Import contacts"). */
export const sidebarLink = (page: Page, label: string) => page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: label, exact: true });

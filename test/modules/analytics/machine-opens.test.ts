import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenPurpose } from '../../../src/mail/compliance.js';
import { classifyOpener } from '../../../src/modules/analytics/index.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { emailRow, seedContact } from '../tracking/fixtures.js';
import { directCounts, ok, rollupCounts, seedEmails } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36';
const OUTLOOK = 'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17928; Pro)';
const APPLE_MPP = 'Mozilla/5.0';
const GMAIL_PROXY = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
const YAHOO_PROXY = 'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html';
const BARRACUDA = 'Mozilla/5.0 (compatible; Barracuda Sentinel (EE))';

const open = (emailId: string, userAgent?: string) =>
  t.app.inject({
    method: 'GET',
    url: `/t/o/${t.deps.tokens.sign(TokenPurpose.open, { e: emailId })}`,
    headers: userAgent === undefined ? {} : { 'user-agent': userAgent },
  });
const click = (emailId: string) =>
  t.app.inject({ method: 'GET', url: `/t/c/${t.deps.tokens.sign(TokenPurpose.click, { e: emailId, u: 'https://example.com/x' })}` });

/** A SENT email of a contact, sent `agoSeconds` ago. */
async function sentEmail(project: TestProject, agoSeconds: number): Promise<{ emailId: string; contactId: string }> {
  const contactId = await seedContact(t.db, project.id);
  const [emailId] = await seedEmails(t.db, project.id, [{ sent: new Date(Date.now() - agoSeconds * 1000), contactId }]);
  if (!emailId) throw new Error('no email');
  return { emailId, contactId };
}

const openEvents = (contactId: string) =>
  t.db.db.selectFrom('events').select('data').where('contact_id', '=', contactId).where('name', '=', 'email.open').execute();

interface Stats {
  sent: number;
  opened: number;
  openedIncludingMachine: number;
  clicked: number;
  openRate: number;
  clickRate: number;
}
const stats = (p: TestProject) => ok<Stats>(t, p.secret, '/activity/stats');

describe('classifyOpener', () => {
  it('knows the privacy proxies, prefetchers and scanners of its list, and nothing else', () => {
    const kind = (userAgent?: string) => classifyOpener({ userAgent }).kind;
    expect(kind(APPLE_MPP)).toBe('machine');
    expect(kind(' Mozilla/5.0 ')).toBe('machine');
    expect(kind(GMAIL_PROXY)).toBe('proxy');
    expect(kind(YAHOO_PROXY)).toBe('proxy');
    expect(kind(BARRACUDA)).toBe('machine');
    expect(kind('Mimecast Security')).toBe('machine');
    expect(kind('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)')).toBe('machine');
    expect(kind('Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0 Safari/537.36')).toBe('machine');
    expect(kind('python-requests/2.31')).toBe('machine');
    expect(kind('curl/8.5.0')).toBe('machine');
    // People's mail clients and browsers.
    expect(kind(CHROME)).toBe('unknown');
    expect(kind(OUTLOOK)).toBe('unknown');
    expect(kind('Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148')).toBe('unknown');
    expect(kind('Mozilla/5.0 (Linux; Android 9; CUBOT X19) AppleWebKit/537.36 Chrome/120 Mobile Safari/537.36')).toBe('unknown');
    expect(kind(undefined)).toBe('unknown');
    expect(kind('')).toBe('unknown');
  });
});

describe('machine opens through the open pixel', () => {
  it('an Apple MPP fetch is flagged and not counted as opened; a later open by a person counts, once', async () => {
    const { project } = await newProject(t.app);
    const { emailId, contactId } = await sentEmail(project, 3600);

    expect((await open(emailId, APPLE_MPP)).statusCode).toBe(200);
    const machine = await emailRow(t.db, emailId);
    expect(machine).toMatchObject({ status: 'OPENED', open_count: 1, machine_open_count: 1, human_opened_at: null });
    expect(machine.opened_at).toBeInstanceOf(Date);
    expect(await openEvents(contactId)).toEqual([{ data: { emailId, machine: true } }]);
    expect(await stats(project)).toMatchObject({ sent: 1, opened: 0, openedIncludingMachine: 1, openRate: 0 });

    expect((await open(emailId, CHROME)).statusCode).toBe(200);
    expect((await open(emailId, CHROME)).statusCode).toBe(200);
    const human = await emailRow(t.db, emailId);
    expect(human).toMatchObject({ open_count: 3, machine_open_count: 1 });
    expect(human.human_opened_at).toBeInstanceOf(Date);
    expect(human.opened_at).toEqual(machine.opened_at);
    expect(await openEvents(contactId)).toHaveLength(1); // email.open stays the first open's, as before
    expect(await stats(project)).toMatchObject({ opened: 1, openedIncludingMachine: 1, openRate: 1 });
    expect(await rollupCounts(t.db, project.id)).toEqual(await directCounts(t.db, project.id));
  });

  it('a mail proxy is a machine within the prefetch window after sending, a reader after it', async () => {
    const { project } = await newProject(t.app);
    const early = await sentEmail(project, 5);
    const late = await sentEmail(project, 600);
    const yahooEarly = await sentEmail(project, 1);
    await open(early.emailId, GMAIL_PROXY);
    await open(late.emailId, GMAIL_PROXY);
    await open(yahooEarly.emailId, YAHOO_PROXY);
    expect(await emailRow(t.db, early.emailId)).toMatchObject({ machine_open_count: 1, human_opened_at: null });
    expect(await emailRow(t.db, yahooEarly.emailId)).toMatchObject({ machine_open_count: 1, human_opened_at: null });
    const reader = await emailRow(t.db, late.emailId);
    expect(reader.machine_open_count).toBe(0);
    expect(reader.human_opened_at).toBeInstanceOf(Date);
    expect(await openEvents(late.contactId)).toEqual([{ data: { emailId: late.emailId } }]);
    expect(await stats(project)).toMatchObject({ sent: 3, opened: 1, openedIncludingMachine: 3 });
  });

  it('the window also runs from the delivery notification', async () => {
    const { project } = await newProject(t.app);
    const { emailId } = await sentEmail(project, 3600);
    await t.db.db.updateTable('emails').set({ delivered_at: new Date(Date.now() - 2000), status: 'DELIVERED' }).where('id', '=', emailId).execute();
    await open(emailId, GMAIL_PROXY);
    expect(await emailRow(t.db, emailId)).toMatchObject({ machine_open_count: 1, human_opened_at: null });
  });

  it('security scanners and Apple MPP are machines whenever they come', async () => {
    const { project } = await newProject(t.app);
    const scanned = await sentEmail(project, 86_400);
    const mpp = await sentEmail(project, 86_400);
    await open(scanned.emailId, BARRACUDA);
    await open(mpp.emailId, APPLE_MPP);
    expect(await emailRow(t.db, scanned.emailId)).toMatchObject({ machine_open_count: 1, human_opened_at: null });
    expect(await emailRow(t.db, mpp.emailId)).toMatchObject({ machine_open_count: 1, human_opened_at: null });
    expect(await stats(project)).toMatchObject({ opened: 0, openedIncludingMachine: 2 });
  });

  it('a click implies an open by a person, also after a machine open', async () => {
    const { project } = await newProject(t.app);
    const afterMachine = await sentEmail(project, 3600);
    const neverOpened = await sentEmail(project, 3600);
    await open(afterMachine.emailId, APPLE_MPP);
    expect((await click(afterMachine.emailId)).statusCode).toBe(302);
    expect((await click(neverOpened.emailId)).statusCode).toBe(302);
    for (const { emailId } of [afterMachine, neverOpened]) {
      const row = await emailRow(t.db, emailId);
      expect(row.human_opened_at).toBeInstanceOf(Date);
      expect(row.clicked_at).toBeInstanceOf(Date);
    }
    expect(await stats(project)).toMatchObject({ sent: 2, opened: 2, clicked: 2, openRate: 1, clickRate: 1 });
    expect(await rollupCounts(t.db, project.id)).toEqual(await directCounts(t.db, project.id));
  });

  it('opens and clicks are counted per email, not per hit', async () => {
    const { project } = await newProject(t.app);
    const a = await sentEmail(project, 3600);
    const b = await sentEmail(project, 3600);
    for (let i = 0; i < 3; i++) await open(a.emailId, CHROME);
    for (let i = 0; i < 2; i++) await click(a.emailId);
    await open(b.emailId, OUTLOOK);
    expect(await emailRow(t.db, a.emailId)).toMatchObject({ open_count: 3, click_count: 2 });
    expect(await stats(project)).toMatchObject({ sent: 2, opened: 2, clicked: 1, openRate: 1, clickRate: 0.5 });
    const today = new Date().toISOString().slice(0, 10);
    const series = await ok<{ data: { date: string; opened: number; clicked: number }[] }>(t, project.secret, '/analytics/timeseries');
    expect(series.data.find((d) => d.date === today)).toMatchObject({ opened: 2, clicked: 1 });
  });
});

import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { createVerp, type InboundReceiver, startInboundReceiver } from '../../../src/modules/bounces/index.js';
import { bearer, newProject, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { addVerifiedDomain } from '../emails/helpers.js';
import { createUploadTestApp, fileExists, type UploadTestApp } from '../uploads/helpers.js';
import { smtpMail } from './inbound-mail-helpers.js';

/**
 * INBOUND_STORE_ATTACHMENTS (docs/bounces.md "Attachments"): real messages over SMTP to the
 * receiver on loopback, attachments stored as private objects of the uploads storage (local disk
 * under a temp DATA_DIR here), downloaded through the authenticated route, never through /files.
 */
const DOMAIN = 'bounces.test';
const silent = pino({ level: 'silent' });
/** The per-attachment cap of the storing receiver (small, so an over-limit attachment is cheap to send). */
const MAX_EACH = 64 * 1024;

let t: UploadTestApp;
let storing: InboundReceiver;
let plain: InboundReceiver;
/** A receiver whose projects may store QUOTA bytes of attachments (UPLOAD_QUOTA_MB counts them apart from images). */
let quotaed: InboundReceiver;
const QUOTA = 10_000;
beforeAll(async () => {
  t = await createUploadTestApp({ BOUNCE_DOMAIN: DOMAIN });
  await t.runWorker();
  const base = { db: t.db.db, verp: createVerp(TEST_SECRET, DOMAIN), log: silent, port: 0, host: '127.0.0.1', maxSizeBytes: 2 * 1024 * 1024, messagesPerMinute: 1_000_000, connectionsPerMinute: 1_000_000, autoDisable: true };
  storing = await startInboundReceiver({ ...base, attachments: { config: t.config, maxAttachmentBytes: MAX_EACH } });
  plain = await startInboundReceiver(base);
  quotaed = await startInboundReceiver({ ...base, attachments: { config: { ...t.config, uploads: { ...t.config.uploads, quotaBytes: QUOTA } } } });
}, 60_000);
afterAll(async () => {
  await storing?.close();
  await plain?.close();
  await quotaed?.close();
  await t?.close();
});

interface Inbound {
  user: SignedInUser;
  project: TestProject;
  domain: string;
}
async function inboundProject(): Promise<Inbound> {
  const { user, project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  await sql`UPDATE domains SET inbound_enabled = true WHERE project_id = ${project.id}::uuid`.execute(t.db.db);
  return { user, project, domain };
}

const get = (project: TestProject, url: string) => t.app.inject({ method: 'GET', url, headers: bearer(project.secret) });
const privateFile = (key: string) => path.join(t.dataDir, 'uploads', 'private', key.slice(42, 44), key.slice(8));
const rowsOf = (projectId: string) =>
  sql<{ index: number; stored: boolean; reason: string | null; storage_key: string | null; sha256: string | null; size: string }>`
    SELECT index, stored, reason, storage_key, sha256, size FROM inbound_attachments WHERE project_id = ${projectId}::uuid ORDER BY inbound_message_id, index`
    .execute(t.db.db)
    .then((r) => r.rows);
async function privateFiles(): Promise<string[]> {
  try {
    const dirs = await readdir(path.join(t.dataDir, 'uploads', 'private'));
    return (await Promise.all(dirs.map((d) => readdir(path.join(t.dataDir, 'uploads', 'private', d))))).flat();
  } catch {
    return [];
  }
}

/** Sends a message with these attachments; the inbound message's id. */
async function receive(receiver: InboundReceiver, p: Inbound, attachments: { filename: string; content: Buffer; contentType: string }[]): Promise<string> {
  const from = `p${randomUUID().slice(0, 8)}@people.example`;
  const to = `support@${p.domain}`;
  const answer = await smtpMail(receiver.port, { from, to: [to] }, { from, to, subject: 'Files', text: 'see attached', messageId: `<m-${randomUUID()}@people.example>`, attachments });
  expect(answer, answer.response).toMatchObject({ ok: true });
  const row = await t.db.db.selectFrom('events').select('data').where('project_id', '=', p.project.id).where('name', '=', 'email.received').orderBy('id', 'desc').executeTakeFirstOrThrow();
  return (row.data as { inboundMessageId: string }).inboundMessageId;
}

describe('INBOUND_STORE_ATTACHMENTS on', () => {
  it('stores an attachment privately and downloads it byte-identical with safe headers; /files never serves it; another project gets 404', async () => {
    const p = await inboundProject();
    const html = Buffer.from('<script>alert(document.cookie)</script>');
    const bin = randomBytes(40_000);
    const id = await receive(storing, p, [
      { filename: 'évil "page".html', content: html, contentType: 'text/html' },
      { filename: 'photo.png', content: bin, contentType: 'image/png' },
    ]);
    const rows = await rowsOf(p.project.id);
    expect(rows.map((r) => [r.index, r.stored, Number(r.size)])).toEqual([[0, true, html.length], [1, true, bin.length]]);
    expect(rows[1]?.sha256).toBe(createHash('sha256').update(bin).digest('hex'));
    for (const r of rows) expect(await fileExists(privateFile(r.storage_key ?? ''))).toBe(true);
    // Every pending deletion was taken back by the commit.
    expect((await sql`SELECT 1 FROM upload_deletions WHERE project_id = ${p.project.id}::uuid`.execute(t.db.db)).rows).toEqual([]);

    const msg = await get(p.project, `/inbound-messages/${id}`);
    expect(msg.statusCode, msg.body).toBe(200);
    expect(msg.json().attachments).toEqual([
      { index: 0, filename: 'évil "page".html', contentType: 'text/html', size: html.length, stored: true, url: `/inbound-messages/${id}/attachments/0` },
      { index: 1, filename: 'photo.png', contentType: 'image/png', size: bin.length, stored: true, url: `/inbound-messages/${id}/attachments/1` },
    ]);

    const page = await get(p.project, `/inbound-messages/${id}/attachments/0`);
    expect(page.statusCode).toBe(200);
    expect(page.rawPayload.equals(html)).toBe(true);
    expect(page.headers['content-type']).toBe('application/octet-stream');
    expect(page.headers['content-disposition']).toBe(`attachment; filename="_vil _page_.html"; filename*=UTF-8''%C3%A9vil%20_page_.html`);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['content-security-policy']).toContain('sandbox');
    const image = await get(p.project, `/inbound-messages/${id}/attachments/1`);
    expect(image.statusCode).toBe(200);
    expect(image.rawPayload.equals(bin)).toBe(true);
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.headers['content-disposition']).toMatch(/^attachment; /);

    // The key is never a public download: not as a path segment, not encoded, not as the bare uuid.
    for (const r of rows) {
      const key = r.storage_key ?? '';
      for (const url of [`/files/${key}`, `/files/${encodeURIComponent(key)}`, `/files/${key.slice(8)}`, `/files/${key.slice(8)}.png`]) {
        expect((await t.app.inject({ method: 'GET', url })).statusCode, url).toBe(404);
      }
    }

    const other = await inboundProject();
    expect((await get(other.project, `/inbound-messages/${id}`)).statusCode).toBe(404);
    expect((await get(other.project, `/inbound-messages/${id}/attachments/1`)).statusCode).toBe(404);
    for (const url of [`/inbound-messages/${id}/attachments/2`, `/inbound-messages/${id}/attachments/-1`, `/inbound-messages/${id}/attachments/x`, '/inbound-messages/nope/attachments/0']) {
      expect((await get(p.project, url)).statusCode, url).toBe(404);
    }
  });

  it('an attachment over the per-attachment limit is recorded, not stored, with the reason; the others are stored', async () => {
    const p = await inboundProject();
    const before = (await privateFiles()).length;
    const id = await receive(storing, p, [
      { filename: 'big.bin', content: randomBytes(MAX_EACH + 1), contentType: 'application/octet-stream' },
      { filename: 'small.txt', content: Buffer.from('fits'), contentType: 'text/plain' },
    ]);
    const rows = await rowsOf(p.project.id);
    expect(rows.map((r) => [r.index, r.stored, r.storage_key === null])).toEqual([[0, false, true], [1, true, false]]);
    expect(rows[0]?.reason).toMatch(/per-attachment limit/);
    expect((await privateFiles()).length).toBe(before + 1);
    const msg = (await get(p.project, `/inbound-messages/${id}`)).json();
    expect(msg.attachments[0]).toMatchObject({ index: 0, filename: 'big.bin', size: MAX_EACH + 1, stored: false });
    expect(msg.attachments[0].reason).toMatch(/per-attachment limit/);
    expect(msg.attachments[0].url).toBeUndefined();
    expect((await get(p.project, `/inbound-messages/${id}/attachments/0`)).statusCode).toBe(404);
    const small = await get(p.project, `/inbound-messages/${id}/attachments/1`);
    expect(small.body).toBe('fits');
    expect(small.headers['content-type']).toBe('text/plain');
  });

  it('the project\'s attachment quota: what would pass it is recorded as not stored; the next message still fits what is left', async () => {
    const p = await inboundProject();
    await receive(quotaed, p, [
      { filename: 'a.bin', content: randomBytes(6000), contentType: 'application/octet-stream' },
      { filename: 'b.bin', content: randomBytes(6000), contentType: 'application/octet-stream' },
      { filename: 'c.bin', content: randomBytes(3000), contentType: 'application/octet-stream' },
    ]);
    const first = await rowsOf(p.project.id);
    expect(first.map((r) => r.stored)).toEqual([true, false, true]);
    expect(first[1]?.reason).toMatch(/quota/);
    // 9,000 stored: 1,000 more fits exactly, one byte more does not.
    await receive(quotaed, p, [
      { filename: 'd.bin', content: randomBytes(1001), contentType: 'application/octet-stream' },
      { filename: 'e.bin', content: randomBytes(1000), contentType: 'application/octet-stream' },
    ]);
    expect((await rowsOf(p.project.id)).map((r) => r.stored)).toEqual([true, false, true, false, true]);
  });

  it('a member downloads with the session cookie and X-Project-Id; a stranger\'s session is refused', async () => {
    const p = await inboundProject();
    const content = randomBytes(777);
    const id = await receive(storing, p, [{ filename: 'f.bin', content, contentType: 'application/octet-stream' }]);
    const url = `/inbound-messages/${id}/attachments/0`;
    const res = await t.app.inject({ method: 'GET', url, headers: { cookie: p.user.cookie, 'x-project-id': p.project.id } });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(content)).toBe(true);
    const stranger = await inboundProject();
    const foreign = await t.app.inject({ method: 'GET', url, headers: { cookie: stranger.user.cookie, 'x-project-id': p.project.id } });
    expect(foreign.statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url })).statusCode).toBe(401);
  });

  it('deleting the project removes its stored files; another project\'s stay', async () => {
    const p = await inboundProject();
    const other = await inboundProject();
    await receive(storing, p, [{ filename: 'a.bin', content: randomBytes(1000), contentType: 'application/octet-stream' }, { filename: 'b.bin', content: randomBytes(2000), contentType: 'application/zip' }]);
    await receive(storing, other, [{ filename: 'c.bin', content: randomBytes(1000), contentType: 'application/octet-stream' }]);
    const mine = (await rowsOf(p.project.id)).map((r) => r.storage_key ?? '');
    const theirs = (await rowsOf(other.project.id)).map((r) => r.storage_key ?? '');
    expect(mine).toHaveLength(2);
    const res = await t.app.inject({ method: 'DELETE', url: `/users/@me/projects/${p.project.id}`, headers: { cookie: p.user.cookie }, payload: { confirm: p.project.name } });
    expect(res.statusCode, res.body).toBe(204);
    for (const key of mine) await until(`${key} removed`, async () => !(await fileExists(privateFile(key))));
    expect(await rowsOf(p.project.id)).toEqual([]);
    for (const key of theirs) expect(await fileExists(privateFile(key))).toBe(true);
  });

  it('resetting the project removes its stored files and rows', async () => {
    const p = await inboundProject();
    await receive(storing, p, [{ filename: 'a.bin', content: randomBytes(500), contentType: 'application/octet-stream' }]);
    const [key] = (await rowsOf(p.project.id)).map((r) => r.storage_key ?? '');
    expect(await fileExists(privateFile(key ?? ''))).toBe(true);
    const res = await t.app.inject({ method: 'POST', url: `/users/@me/projects/${p.project.id}/reset`, headers: { cookie: p.user.cookie }, payload: { confirm: p.project.name } });
    expect(res.statusCode, res.body).toBeLessThan(300);
    await until(`${key} removed`, async () => !(await fileExists(privateFile(key ?? ''))));
    expect(await rowsOf(p.project.id)).toEqual([]);
  });
});

describe('INBOUND_STORE_ATTACHMENTS off', () => {
  it('keeps metadata only: no rows, no files; the attachment is listed as not stored and cannot be downloaded', async () => {
    const p = await inboundProject();
    const before = (await privateFiles()).length;
    const id = await receive(plain, p, [{ filename: 'x.pdf', content: randomBytes(3000), contentType: 'application/pdf' }]);
    expect(await rowsOf(p.project.id)).toEqual([]);
    expect((await privateFiles()).length).toBe(before);
    expect((await sql`SELECT 1 FROM upload_deletions WHERE project_id = ${p.project.id}::uuid`.execute(t.db.db)).rows).toEqual([]);
    const msg = (await get(p.project, `/inbound-messages/${id}`)).json();
    expect(msg.attachments).toHaveLength(1);
    expect(msg.attachments[0]).toMatchObject({ index: 0, filename: 'x.pdf', contentType: 'application/pdf', size: 3000, stored: false });
    expect(msg.attachments[0].url).toBeUndefined();
    expect((await get(p.project, `/inbound-messages/${id}/attachments/0`)).statusCode).toBe(404);
  });
});

describe('configuration', () => {
  it('INBOUND_STORE_ATTACHMENTS is off by default, on with true, refused when not a boolean', () => {
    const base = { SECRET: 's'.repeat(32), DATA_DIR: '/tmp/inbound-attachments-config', BOUNCE_DOMAIN: DOMAIN, INBOUND_SMTP_PORT: '2525' };
    expect(loadConfig(base).inboundSmtp?.storeAttachments).toBe(false);
    expect(loadConfig({ ...base, INBOUND_STORE_ATTACHMENTS: 'true' }).inboundSmtp?.storeAttachments).toBe(true);
    expect(() => loadConfig({ ...base, INBOUND_STORE_ATTACHMENTS: 'sometimes' })).toThrow(/INBOUND_STORE_ATTACHMENTS/);
  });
});

import { randomBytes, randomUUID } from 'node:crypto';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVerp, type InboundReceiver } from '../../../src/modules/bounces/index.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { addVerifiedDomain } from '../emails/helpers.js';
import { createUploadTestApp, startTestS3, type TestS3, type UploadTestApp } from '../uploads/helpers.js';
import { startTestReceiver } from './helpers.js';
import { smtpMail } from './inbound-mail-helpers.js';

/**
 * INBOUND_STORE_ATTACHMENTS with S3-compatible storage (docs/bounces.md "Attachments"): a real
 * s3rver on loopback; the attachment lands under the bucket's `private/` prefix, downloads through
 * the authenticated route, is never served by /files, and leaves the bucket with its project.
 */
const BUCKET = 'mail-private';
const DOMAIN = 'bounces.test';
let s3: TestS3;
let t: UploadTestApp;
let client: S3Client;
let receiver: InboundReceiver;

beforeAll(async () => {
  s3 = await startTestS3(BUCKET);
  client = s3.client;
  t = await createUploadTestApp({ BOUNCE_DOMAIN: DOMAIN, ...s3.env });
  await t.runWorker();
  receiver = await startTestReceiver(t.db.db, createVerp(TEST_SECRET, DOMAIN), { maxSizeBytes: 2 * 1024 * 1024, attachments: { config: t.config } });
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await t?.close();
  await s3?.close();
});

const objectExists = (key: string) => s3.objectExists(key);

describe('inbound attachments in S3 storage', () => {
  it('stored under private/, downloaded byte-identical, never served by /files, removed with the project', async () => {
    const { user, project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    await sql`UPDATE domains SET inbound_enabled = true WHERE project_id = ${project.id}::uuid`.execute(t.db.db);
    const content = randomBytes(50_000);
    const from = `p${randomUUID().slice(0, 8)}@people.example`;
    const answer = await smtpMail(receiver.port, { from, to: [`in@${domain}`] }, { from, to: `in@${domain}`, subject: 'S3', text: 'x', attachments: [{ filename: 'doc.zip', content, contentType: 'application/zip' }] });
    expect(answer, answer.response).toMatchObject({ ok: true });
    const { rows } = await sql<{ inbound_message_id: string; storage_key: string }>`
      SELECT inbound_message_id, storage_key FROM inbound_attachments WHERE project_id = ${project.id}::uuid AND stored`.execute(t.db.db);
    const [row] = rows;
    expect(row?.storage_key).toMatch(/^private\//);
    const key = row?.storage_key ?? '';
    const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    expect(Buffer.from(await object.Body?.transformToByteArray() ?? []).equals(content)).toBe(true);

    const res = await t.app.inject({ method: 'GET', url: `/inbound-messages/${row?.inbound_message_id}/attachments/0`, headers: bearer(project.secret) });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(content)).toBe(true);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    for (const url of [`/files/${key}`, `/files/${encodeURIComponent(key)}`]) expect((await t.app.inject({ method: 'GET', url })).statusCode, url).toBe(404);

    const del = await t.app.inject({ method: 'DELETE', url: `/users/@me/projects/${project.id}`, headers: { cookie: user.cookie }, payload: { confirm: project.name } });
    expect(del.statusCode, del.body).toBe(204);
    await until(`${key} removed from the bucket`, async () => !(await objectExists(key)));
  });
});

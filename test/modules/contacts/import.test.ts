import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertContacts } from '../../../src/modules/contacts/contacts.upsert.js';
import { insertImportChunks } from '../../../src/modules/contacts/import.repo.js';
import { runImportJob } from '../../../src/modules/contacts/import.service.js';
import { insertJob } from '../../../src/modules/contacts/jobs.repo.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { sleep } from '../../helpers/process.js';
import { floodUpload } from '../../helpers/raw-http.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ worker: {} });
});
afterAll(() => t?.close());

interface Part {
  name: string;
  filename?: string;
  content: string | Buffer;
}

function multipart(parts: Part[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----test${randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}`;
    const type = p.filename ? 'Content-Type: text/csv\r\n' : '';
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(p.content), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

async function upload(project: TestProject, parts: Part[]) {
  const { payload, headers } = multipart(parts);
  return t.app.inject({ method: 'POST', url: '/contacts/import', headers: { ...headers, ...bearer(project.secret) }, payload });
}

interface JobBody {
  status: string;
  total: number;
  processed: number;
  failed: number;
  errors: { row: number; message: string }[];
}

/** Uploads a CSV and polls its job until it ends (at most 15 s). */
async function importCsv(project: TestProject, csv: string | Buffer): Promise<JobBody & { id: string }> {
  const res = await upload(project, [{ name: 'file', filename: 'contacts.csv', content: csv }]);
  expect(res.statusCode, res.body).toBe(202);
  const { jobId } = res.json<{ jobId: string }>();
  const deadline = Date.now() + 15_000;
  for (;;) {
    const status = await t.app.inject({ method: 'GET', url: `/contacts/import/${jobId}`, headers: bearer(project.secret) });
    expect(status.statusCode, status.body).toBe(200);
    const body = status.json<JobBody & { id: string }>();
    if (body.status === 'COMPLETED' || body.status === 'FAILED') return body;
    if (Date.now() > deadline) throw new Error(`import not finished within 15 s: ${status.body}`);
    await sleep(50);
  }
}

const contactsOf = async (projectId: string) =>
  Object.fromEntries(
    (await t.db.db.selectFrom('contacts').select(['email', 'subscribed', 'data']).where('project_id', '=', projectId).execute()).map((r) => [
      r.email,
      { subscribed: r.subscribed, data: r.data },
    ]),
  );

const storedOf = async (projectId: string) => ({
  jobs: await t.db.db.selectFrom('jobs').select('id').where('project_id', '=', projectId).execute(),
  chunks: await t.db.db
    .selectFrom('import_chunks as c')
    .innerJoin('jobs as j', 'j.id', 'c.job_id')
    .select('c.seq')
    .where('j.project_id', '=', projectId)
    .execute(),
});

describe('POST /contacts/import', () => {
  it('imports the good rows and reports each bad row with its data row number', async () => {
    const { project } = await newProject(t.app);
    const csv = [
      '\uFEFFEmail,Plan,subscribed,zip',
      'alice@example.com,pro,,00123',
      'not-an-email,pro,,1',
      'bob@example.com,free,maybe,2',
      'carol@example.com,team,no,3,extra',
      '',
      'dave@example.com,solo,no,4',
      ' ,x,,',
      ' EVE@Example.com , pro , 1 , 5 ',
    ].join('\r\n');
    const job = await importCsv(project, csv);
    expect(job).toMatchObject({ status: 'COMPLETED', total: 7, processed: 3, failed: 4 });
    expect(job.errors).toEqual([
      { row: 2, message: expect.stringMatching(/invalid email "not-an-email"/i) },
      { row: 3, message: expect.stringMatching(/invalid subscribed value "maybe"/i) },
      { row: 4, message: 'The row has 5 columns; the header has 4' },
      { row: 6, message: 'Missing email' },
    ]);
    expect(await contactsOf(project.id)).toEqual({
      'alice@example.com': { subscribed: true, data: { Plan: 'pro', zip: '00123' } },
      'dave@example.com': { subscribed: false, data: { Plan: 'solo', zip: '4' } },
      'eve@example.com': { subscribed: true, data: { Plan: 'pro', zip: '5' } },
    });
    expect((await storedOf(project.id)).chunks).toEqual([]);
  });

  it('fails the job when the header has no email column', async () => {
    const { project } = await newProject(t.app);
    const job = await importCsv(project, 'mail,plan\na@example.com,pro\n');
    expect(job).toMatchObject({ status: 'FAILED', processed: 0, failed: 0 });
    expect(job.errors).toEqual([{ row: 0, message: expect.stringMatching(/no email column/) }]);
    expect(await contactsOf(project.id)).toEqual({});
    expect((await storedOf(project.id)).chunks).toEqual([]);
  });

  it('stops at malformed CSV quoting, keeping the rows before it', async () => {
    const { project } = await newProject(t.app);
    const job = await importCsv(project, 'email,plan\na@example.com,pro\n"b@example.com"x,free\nc@example.com,team\n');
    expect(job).toMatchObject({ status: 'FAILED', processed: 1, failed: 0 });
    expect(job.errors).toEqual([{ row: 2, message: expect.stringMatching(/^Malformed CSV/) }]);
    expect(Object.keys(await contactsOf(project.id))).toEqual(['a@example.com']);
  });

  it('answers 413 PAYLOAD_TOO_LARGE above 5 MB and stores nothing', async () => {
    const { project } = await newProject(t.app);
    const row = 'someone@example.com,padding-padding-padding-padding\n';
    const over = (bytes: number) => `email,pad\n${row.repeat(Math.ceil(bytes / row.length))}`.slice(0, bytes);
    // Content-Length clearly over: refused before the body is read.
    const big = await upload(project, [{ name: 'file', filename: 'big.csv', content: over(6 * 1024 * 1024) }]);
    expectEnvelope(big, 413, 'PAYLOAD_TOO_LARGE');
    // Just over: the multipart file limit stops the stream, the upload's transaction rolls back.
    const just = await upload(project, [{ name: 'file', filename: 'just.csv', content: over(5 * 1024 * 1024 + 10) }]);
    expect(expectEnvelope(just, 413, 'PAYLOAD_TOO_LARGE').message).toMatch(/5 MB/);
    expect(await storedOf(project.id)).toEqual({ jobs: [], chunks: [] });
  });

  it('cuts a chunked upload (no Content-Length) off at 5 MB: 413 while the client is still sending, the connection closed', async () => {
    const { project } = await newProject(t.app);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const result = await floodUpload(port, project.secret, 100 * 1024 * 1024, { path: '/contacts/import', field: 'file', filename: 'big.csv' });
    expect(result.status).toBe(413);
    expect(result.connectionClose).toBe(true);
    // The server read ~5 MB; loopback socket buffers hold a few MB more.
    expect(result.sent).toBeLessThan(30 * 1024 * 1024);
    expect(await storedOf(project.id)).toEqual({ jobs: [], chunks: [] });
  });

  it('refuses a request without a CSV file in the field "file" with 422', async () => {
    const { project } = await newProject(t.app);
    const cases = [
      await upload(project, [{ name: 'note', content: 'hello' }]),
      await upload(project, [{ name: 'upload', filename: 'c.csv', content: 'email\na@example.com\n' }]),
      await upload(project, [{ name: 'file', filename: 'c.png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]) }]),
      await upload(project, [{ name: 'file', filename: 'c.csv', content: Buffer.from([0x65, 0x6d, 0xff, 0xfe, 0x0a]) }]),
      await upload(project, [{ name: 'file', filename: 'empty.csv', content: '' }]),
      await t.app.inject({ method: 'POST', url: '/contacts/import', headers: bearer(project.secret), payload: { file: 'email\n' } }),
    ];
    for (const res of cases) {
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors).toEqual([expect.objectContaining({ field: 'file', message: expect.any(String) })]);
    }
    expect(await storedOf(project.id)).toEqual({ jobs: [], chunks: [] });
  });

  it('applies the data rules: reserved columns dropped, empty cells ignored, cells kept as strings', async () => {
    const { project } = await newProject(t.app);
    await t.db.db
      .transaction()
      .execute((trx) => upsertContacts(trx, project.id, [{ email: 'a@example.com', patch: { note: 'keep', score: 1 }, subscribedIfNew: true }]));
    const job = await importCsv(project, 'email,id,unsubscribeUrl,note,score,flag,\na@example.com,123,http://x,,42,true,\nb@example.com,,,"multi\nline, ""quoted""",7.50,,\n');
    expect(job).toMatchObject({ status: 'COMPLETED', total: 2, processed: 2, failed: 0 });
    expect(await contactsOf(project.id)).toEqual({
      'a@example.com': { subscribed: true, data: { note: 'keep', score: '42', flag: 'true' } },
      'b@example.com': { subscribed: true, data: { note: 'multi\nline, "quoted"', score: '7.50' } },
    });
  });

  it('merges duplicate emails of one file in order: later cells and subscription win', async () => {
    const { project } = await newProject(t.app);
    const job = await importCsv(project, 'email,plan,city,subscribed\na@example.com,pro,Oslo,\nb@example.com,free,,\nA@example.com,team,,no\n');
    expect(job).toMatchObject({ status: 'COMPLETED', total: 3, processed: 3, failed: 0 });
    expect(await contactsOf(project.id)).toEqual({
      'a@example.com': { subscribed: false, data: { plan: 'team', city: 'Oslo' } },
      'b@example.com': { subscribed: true, data: { plan: 'free' } },
    });
  });

  it('updates contacts on re-import instead of duplicating them, keeping subscriptions unless given', async () => {
    const { project } = await newProject(t.app);
    await importCsv(project, 'email,plan\na@example.com,free\nb@example.com,free\nc@example.com,free\n');
    const [b] = await t.db.db
      .transaction()
      .execute((trx) => upsertContacts(trx, project.id, [{ email: 'b@example.com', patch: {}, subscribed: false, subscribedIfNew: true }]));
    const [c] = await t.db.db
      .transaction()
      .execute((trx) => upsertContacts(trx, project.id, [{ email: 'c@example.com', patch: {}, subscribed: false, subscribedIfNew: true }]));

    const job = await importCsv(project, 'email,plan,subscribed\na@example.com,pro,\nb@example.com,pro,\nc@example.com,pro,yes\nd@example.com,pro,\n');
    expect(job).toMatchObject({ status: 'COMPLETED', processed: 4, failed: 0 });
    expect(await contactsOf(project.id)).toEqual({
      'a@example.com': { subscribed: true, data: { plan: 'pro' } },
      'b@example.com': { subscribed: false, data: { plan: 'pro' } },
      'c@example.com': { subscribed: true, data: { plan: 'pro' } },
      'd@example.com': { subscribed: true, data: { plan: 'pro' } },
    });
    const events = await t.db.db
      .selectFrom('events')
      .select(['contact_id', 'name'])
      .where('contact_id', 'in', [b?.row.id ?? '', c?.row.id ?? ''])
      .orderBy('id')
      .execute();
    expect(events.map((e) => `${e.contact_id === c?.row.id ? 'c' : 'b'}:${e.name}`)).toEqual([
      'b:contact.unsubscribed',
      'c:contact.unsubscribed',
      'c:contact.subscribed',
    ]);
  });

  it('resumes after the last committed batch when a run stops, without double counting', async () => {
    const { project } = await newProject(t.app);
    const csv = Buffer.from('email,plan\na@example.com,1\nbad,2\nc@example.com,3\nd@example.com,4\ne@example.com,5\n');
    // A job row and its file in three pieces cut mid-row, without a queued task: run by hand.
    const jobId = await t.db.db.transaction().execute(async (trx) => {
      const id = await insertJob(trx, { projectId: project.id, kind: 'import', total: 5 });
      await insertImportChunks(trx, project.id, id, [csv.subarray(0, 13), csv.subarray(13, 40), csv.subarray(40)]);
      return id;
    });
    // A shutdown after the first batch of two rows.
    const { signal } = new AbortController();
    Object.defineProperty(signal, 'aborted', { get: () => true });
    await expect(runImportJob(t.db.db, jobId, { batchRows: 2, signal })).rejects.toThrow(/resumes/);
    const partial = await t.db.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(partial).toMatchObject({ status: 'PROCESSING', processed: 1, failed: 1 });

    await runImportJob(t.db.db, jobId, { batchRows: 2 });
    await runImportJob(t.db.db, jobId, { batchRows: 2 }); // finished: nothing happens
    const done = await t.db.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(done).toMatchObject({ status: 'COMPLETED', total: 5, processed: 4, failed: 1, errors: [{ row: 2, message: 'Invalid email "bad"' }] });
    expect(Object.keys(await contactsOf(project.id)).sort()).toEqual(['a@example.com', 'c@example.com', 'd@example.com', 'e@example.com']);
    expect((await storedOf(project.id)).chunks).toEqual([]);
  });
});

describe('GET /contacts/import/:jobId', () => {
  it('answers 404 for another project, a malformed or unknown id, and a bulk job', async () => {
    const mine = await newProject(t.app);
    const theirs = await newProject(t.app);
    const theirJob = await importCsv(theirs.project, 'email\na@example.com\n');
    const bulk = await t.app.inject({
      method: 'POST',
      url: '/contacts/bulk-subscribe',
      headers: bearer(mine.project.secret),
      payload: { contactIds: [randomUUID()] },
    });
    for (const id of [theirJob.id, 'x', randomUUID(), bulk.json<{ jobId: string }>().jobId]) {
      expectEnvelope(await t.app.inject({ method: 'GET', url: `/contacts/import/${id}`, headers: bearer(mine.project.secret) }), 404, 'NOT_FOUND');
    }
  });
});

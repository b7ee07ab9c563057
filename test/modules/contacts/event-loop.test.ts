import { monitorEventLoopDelay } from 'node:perf_hooks';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertImportChunks } from '../../../src/modules/contacts/import.repo.js';
import { runImportJob } from '../../../src/modules/contacts/import.service.js';
import { insertJob } from '../../../src/modules/contacts/jobs.repo.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { uploadCsv, waitForImport } from './import-helpers.js';

/**
 * The API and the job worker share one process (ROLE=all, and here): no accepted input may hold
 * the event loop for long. The target is ~100 ms. The
 * bound is 250 ms because the histogram also counts time the OS does not run this process (two
 * test files, PostgreSQL and the worker share 2 cores in CI); before the fixes these cases held
 * the loop for seconds (/health 2.3 s behind a 600,000-column import), far above it. For the same
 * reason a case is run up to three times and passes when one run stays under the bound: on a
 * slow machine a run was seen at 277 ms with the slicing in place, while work that holds the
 * loop exceeds the bound at every run (the 5 MB piece without slicing: 427 ms on a faster one).
 */
const MAX_DELAY_MS = 250;
/** The largest CSV file accepted (SPEC Limits: 5 MB). */
const MAX_IMPORT_BYTES = 5 * 1024 * 1024;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ worker: {} });
});
afterAll(() => t?.close());

/**
 * Runs `fn` while sampling the event loop every 10 ms; returns its result, the longest delay seen
 * and the CPU time the process spent meanwhile (all its threads).
 */
async function measured<R>(fn: () => Promise<R>): Promise<{ result: R; maxDelayMs: number; cpuMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const cpu = process.cpuUsage();
  try {
    const result = await fn();
    const used = process.cpuUsage(cpu);
    return { result, maxDelayMs: histogram.max / 1e6, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    histogram.disable();
  }
}

/** A CSV of about `bytes` bytes: email, subscribed and `dataColumns` data columns of short cells. */
function wideCsv(bytes: number, dataColumns: number): string {
  const names = Array.from({ length: dataColumns }, (_, i) => `field_${i}`);
  const lines = [['email', 'subscribed', ...names].join(',')];
  let size = lines[0]?.length ?? 0;
  for (let row = 0; size < bytes - 4_000; row++) {
    const line = [`row${row}@example.com`, row % 2 ? 'yes' : 'no', ...names.map((_, i) => `v${(row * 7 + i) % 1000}`)].join(',');
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

describe('the event loop stays responsive', { retry: 2 }, () => {
  // The import job is measured from its 202 on: receiving the upload is the HTTP layer's (and
  // inject() hands the body over as one 5 MB chunk, which real sockets never do).
  it(`while the job of a ${MAX_IMPORT_BYTES / 1024 / 1024} MB import with 202 columns runs`, async () => {
    const { project } = await newProject(t.app);
    const csv = wideCsv(MAX_IMPORT_BYTES, 200);
    expect(csv.length).toBeLessThanOrEqual(MAX_IMPORT_BYTES);
    const jobId = await uploadCsv(t.app, project, csv);
    const { result: job, maxDelayMs } = await measured(() => waitForImport(t.app, project, jobId, 120_000));
    expect(job).toMatchObject({ status: 'COMPLETED', failed: 0 });
    expect(job.processed).toBeGreaterThan(3_000);
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
  });

  it('while the job of a 5 MB import stored as one piece runs: csv-parse is fed 8 KB at a time', async () => {
    const { project } = await newProject(t.app);
    const csv = Buffer.from(wideCsv(MAX_IMPORT_BYTES, 200));
    // However the upload stores the file, the job must never hand the parser all of it at once.
    const jobId = await t.db.db.transaction().execute(async (trx) => {
      const id = await insertJob(trx, { projectId: project.id, kind: 'import', total: 0 });
      await insertImportChunks(trx, project.id, id, [csv]);
      return id;
    });
    const { maxDelayMs } = await measured(() => runImportJob(t.db.db, jobId));
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
    const job = await t.db.db.selectFrom('jobs').select(['status', 'processed', 'failed']).where('id', '=', jobId).executeTakeFirstOrThrow();
    expect(job).toMatchObject({ status: 'COMPLETED', failed: 0 });
  });

  it('while the job of a 5 MB file whose header has 600,000 columns refuses it', async () => {
    const { project } = await newProject(t.app);
    const csv = `${['email', ...Array.from({ length: 600_000 }, (_, i) => `c${i}`)].join(',')}\n`;
    expect(csv.length).toBeLessThanOrEqual(MAX_IMPORT_BYTES);
    const jobId = await uploadCsv(t.app, project, csv);
    const { result: job, maxDelayMs, cpuMs } = await measured(() => waitForImport(t.app, project, jobId, 60_000));
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
    // Refused from the first bytes: csv-parse building that row would take seconds of CPU.
    expect(cpuMs).toBeLessThan(1_000);
    expect(job).toMatchObject({ status: 'FAILED', processed: 0 });
    expect(job.errors).toEqual([{ row: 0, message: expect.stringMatching(/^The header row has more than 202 columns; at most 202/) }]);
  });

  it('while GET /contacts/fields answers for a project with 400,000 distinct data keys, in a bounded answer', async () => {
    const { project } = await newProject(t.app);
    // 2,000 contacts with 200 keys each, all distinct (as the data rules allow).
    await sql`
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ${project.id}, 'c' || g || '@example.com', true,
             (SELECT jsonb_object_agg('key_' || g || '_' || k, k) FROM generate_series(1, 200) k)
      FROM generate_series(1, 2000) g`.execute(t.db.db);
    const { result: res, maxDelayMs } = await measured(() => t.app.inject({ method: 'GET', url: '/contacts/fields', headers: bearer(project.secret) }));
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    const body = res.json<{ data: unknown[]; totalContacts: number; totalKeys: number; truncated: boolean }>();
    expect(body).toMatchObject({ totalContacts: 2000, totalKeys: 400_000, truncated: true });
    expect(body.data).toHaveLength(4 + 1000);
    expect(res.rawPayload.length).toBeLessThan(200 * 1024);
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
  });

  it('while POST /contacts/lookup answers 500 contacts holding the most data allowed (~20 MB)', async () => {
    const { project } = await newProject(t.app);
    // 200 keys each, ~64 KB as JSON: a third numbers, the rest 288-character strings.
    await sql`
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ${project.id}, 'c' || g || '@example.com', true,
             (SELECT jsonb_object_agg('key_' || k, CASE WHEN k % 3 = 0 THEN to_jsonb(k * 1.5) ELSE to_jsonb(repeat(md5(k::text), 9)) END)
              FROM generate_series(0, 199) k)
      FROM generate_series(1, 500) g`.execute(t.db.db);
    const emails = Array.from({ length: 500 }, (_, i) => `c${i + 1}@example.com`);
    const { result: res, maxDelayMs } = await measured(() =>
      t.app.inject({ method: 'POST', url: '/contacts/lookup', headers: bearer(project.secret), payload: { emails } }),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json<{ data: { exists: boolean }[] }>().data.filter((d) => d.exists)).toHaveLength(500);
    expect(maxDelayMs).toBeLessThan(MAX_DELAY_MS);
  });
});

import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { bearer, type TestProject } from '../../helpers/accounts.js';

/** A multipart/form-data body with one CSV file in the field `file`. */
export function csvMultipart(csv: string | Buffer): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----test${randomUUID()}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contacts.csv"\r\nContent-Type: text/csv\r\n\r\n`),
    Buffer.from(csv),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export interface ImportJob {
  id: string;
  status: string;
  total: number;
  processed: number;
  failed: number;
  errors: { row: number; message: string }[];
}

/** Uploads a CSV (202) and returns its job id. */
export async function uploadCsv(app: FastifyInstance, project: TestProject, csv: string | Buffer): Promise<string> {
  const { payload, headers } = csvMultipart(csv);
  const res = await app.inject({ method: 'POST', url: '/contacts/import', headers: { ...headers, ...bearer(project.secret) }, payload });
  expect(res.statusCode, res.body).toBe(202);
  return res.json<{ jobId: string }>().jobId;
}

/** Polls an import job until it ends (at most `timeoutMs`). */
export async function waitForImport(app: FastifyInstance, project: TestProject, jobId: string, timeoutMs = 30_000): Promise<ImportJob> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await app.inject({ method: 'GET', url: `/contacts/import/${jobId}`, headers: bearer(project.secret) });
    expect(res.statusCode, res.body).toBe(200);
    const job = res.json<ImportJob>();
    if (job.status === 'COMPLETED' || job.status === 'FAILED') return job;
    if (Date.now() > deadline) throw new Error(`import not finished within ${timeoutMs} ms: ${res.body}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Uploads a CSV and waits for its job to end. */
export async function importCsv(app: FastifyInstance, project: TestProject, csv: string | Buffer): Promise<ImportJob> {
  return waitForImport(app, project, await uploadCsv(app, project, csv));
}

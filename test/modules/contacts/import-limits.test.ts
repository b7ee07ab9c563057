import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContactData } from '../../../src/db/schema.js';
import { upsertContacts } from '../../../src/modules/contacts/contacts.upsert.js';
import { newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { importCsv } from './import-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ worker: {} });
});
afterAll(() => t?.close());

const keys = (n: number, prefix = 'k'): ContactData => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, String(i)]));
const csvLine = (cells: readonly string[]) => `${cells.join(',')}\n`;

const contactsOf = async (projectId: string) =>
  Object.fromEntries(
    (await t.db.db.selectFrom('contacts').select(['email', 'data']).where('project_id', '=', projectId).execute()).map((r) => [r.email, r.data]),
  );

describe('CSV import and the contact data limits', () => {
  it('fails the job when the header has more than 202 columns, naming the limit, and imports nothing', async () => {
    const { project } = await newProject(t.app);
    const header = ['email', 'subscribed', ...Object.keys(keys(201))];
    const job = await importCsv(t.app, project, csvLine(header) + csvLine(['a@example.com', 'true', ...header.slice(2).map(() => 'x')]));
    expect(job).toMatchObject({ status: 'FAILED', processed: 0 });
    expect(job.errors).toEqual([{ row: 0, message: expect.stringMatching(/^The header row has more than 202 columns; at most 202 are allowed/) }]);
    expect(await contactsOf(project.id)).toEqual({});
  });

  it('imports a file at the limits: email, subscribed and 200 data columns', async () => {
    const { project } = await newProject(t.app);
    const data = keys(200);
    const job = await importCsv(t.app, project, csvLine(['email', 'subscribed', ...Object.keys(data)]) + csvLine(['a@example.com', 'no', ...Object.values(data).map(String)]));
    expect(job).toMatchObject({ status: 'COMPLETED', processed: 1, failed: 0 });
    expect(await contactsOf(project.id)).toEqual({ 'a@example.com': data });
  });

  it('fails the job on a header name longer than a data key may be', async () => {
    const { project } = await newProject(t.app);
    const job = await importCsv(t.app, project, csvLine(['email', 'k'.repeat(101)]) + csvLine(['a@example.com', 'x']));
    expect(job.status).toBe('FAILED');
    expect(job.errors).toEqual([{ row: 0, message: expect.stringMatching(/Data keys are at most 100 characters/) }]);
  });

  it('reports a row over a value limit as a row error and imports the others', async () => {
    const { project } = await newProject(t.app);
    const csv = csvLine(['email', 'bio']) + csvLine(['a@example.com', 'short']) + csvLine(['b@example.com', 'x'.repeat(10_001)]) + csvLine(['c@example.com', 'ok']);
    const job = await importCsv(t.app, project, csv);
    expect(job).toMatchObject({ status: 'COMPLETED', processed: 2, failed: 1 });
    expect(job.errors).toEqual([{ row: 2, message: 'Column "bio": String values are at most 10000 characters' }]);
    expect(await contactsOf(project.id)).toEqual({ 'a@example.com': { bio: 'short' }, 'c@example.com': { bio: 'ok' } });
  });

  it('reports the rows of a contact whose stored data would break a limit after the merge, leaving it unchanged', async () => {
    const { project } = await newProject(t.app);
    await t.db.db.transaction().execute((trx) => upsertContacts(trx, project.id, [{ email: 'full@example.com', patch: keys(190), subscribedIfNew: true }]));
    const added = Object.keys(keys(20, 'new'));
    const row = (email: string) => csvLine([email, ...added.map(() => 'v')]);
    const job = await importCsv(t.app, project, csvLine(['email', ...added]) + row('full@example.com') + row('ok@example.com') + row('FULL@example.com'));
    expect(job).toMatchObject({ status: 'COMPLETED', total: 3, processed: 1, failed: 2 });
    const message = expect.stringMatching(/^A contact holds at most 200 data keys/);
    expect(job.errors).toEqual([
      { row: 1, message },
      { row: 3, message },
    ]);
    const stored = await contactsOf(project.id);
    expect(stored['full@example.com']).toEqual(keys(190));
    expect(Object.keys(stored['ok@example.com'] ?? {})).toHaveLength(20);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { readCsv, readNdjson, seedContacts } from './export-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const exportOf = (project: TestProject, query = '') => t.app.inject({ method: 'GET', url: `/contacts/export${query}`, headers: bearer(project.secret) });
const q = (params: Record<string, string>) => `?${new URLSearchParams(params).toString()}`;
const emailsOf = (csv: string) => readCsv(csv).slice(1).map((r) => r[0]);

/** A refused export: the error envelope, and nothing of a file. */
function expectRefused(res: Awaited<ReturnType<typeof exportOf>>, status: number, code: string) {
  const error = expectEnvelope(res, status, code);
  expect(res.headers['content-disposition']).toBeUndefined();
  return error;
}

async function segment(project: TestProject, body: Record<string, unknown>): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/segments', headers: bearer(project.secret), payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>().id;
}

const planIs = (plan: string) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: plan }] }] });

describe('GET /contacts/export: the file', () => {
  it('streams CSV: BOM, header with one column per data key (byte order), CRLF records oldest first, values by type (numbers with their exact digits)', async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [
      { email: 'ada@example.com', data: '{"plan": "pro", "age": 36, "vip": true, "big": 12345678901234567890, "tags": ["a", "b"]}' },
      { email: 'bob@example.com', subscribed: false, data: { plan: 'free', Zone: 'eu', nested: { x: 1 } } },
      { email: 'cy@example.com' },
    ]);
    await seedContacts(t.db.db, (await newProject(t.app)).project.id, [{ email: 'other@example.com', data: { otherKey: 1 } }]);

    const res = await exportOf(project);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="contacts-test-project-\d{4}-\d\d-\d\d\.csv"$/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body.startsWith('\uFEFFemail,subscribed,createdAt,Zone,age,big,nested,plan,tags,vip\r\n')).toBe(true);
    expect(res.body).toBe(
      '\uFEFFemail,subscribed,createdAt,Zone,age,big,nested,plan,tags,vip\r\n' +
        'ada@example.com,true,2026-01-01T00:00:00.000Z,,36,12345678901234567890,,pro,"[""a"", ""b""]",true\r\n' +
        'bob@example.com,false,2026-01-01T00:00:00.001Z,eu,,,"{""x"": 1}",free,,\r\n' +
        'cy@example.com,true,2026-01-01T00:00:00.002Z,,,,,,,\r\n',
    );
  });

  it('leaves out the byte order mark with bom=false; a project without contacts is the header alone', async () => {
    const { project } = await newProject(t.app);
    const res = await exportOf(project, '?bom=false');
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('email,subscribed,createdAt\r\n');
  });

  it('streams NDJSON: one object {email, subscribed, createdAt, data} per line, values as stored, nothing neutralised', async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [
      { email: 'ada@example.com', data: { plan: '=pro', n: -5, note: 'two\nlines, "quoted"' } },
      { email: 'bob@example.com', subscribed: false },
    ]);
    const res = await exportOf(project, '?format=ndjson');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson');
    expect(res.headers['content-disposition']).toMatch(/filename="contacts-test-project-\d{4}-\d\d-\d\d\.ndjson"$/);
    expect(res.body.split('\n')).toHaveLength(3); // two lines and the final line end
    expect(readNdjson(res.body)).toEqual([
      { email: 'ada@example.com', subscribed: true, createdAt: '2026-01-01T00:00:00.000Z', data: { plan: '=pro', n: -5, note: 'two\nlines, "quoted"' } },
      { email: 'bob@example.com', subscribed: false, createdAt: '2026-01-01T00:00:00.001Z', data: {} },
    ]);
  });

  it('escapes CSV cells (quotes, commas, line breaks) and neutralises formulas (= + - @ tab CR) in cells and header', async () => {
    const { project } = await newProject(t.app);
    const values = {
      quote: 'say "hi"',
      comma: 'a, b',
      lf: 'line\nbreak',
      crlf: 'line\r\nbreak',
      eq: '=1+2',
      plus: '+31 6 1234',
      minus: '-2+3',
      at: '@SUM(A1:A9)',
      tab: '\t=1',
      cr: '\r=1',
      dde: "=cmd|' /C calc'!A0",
      negative: -5,
      numericText: '-5',
      safe: 'a=b',
      '=key': 'x',
      subscribed: 'a data key',
    };
    await seedContacts(t.db.db, project.id, [{ email: '-dash@example.com', data: values }]);
    const res = await exportOf(project);
    expect(res.statusCode, res.body).toBe(200);
    const [header, row] = readCsv(res.body);
    const cell = Object.fromEntries((header ?? []).map((name, i) => [name, row?.[i]]));
    expect(cell).toEqual({
      email: "'-dash@example.com",
      subscribed: 'true',
      createdAt: '2026-01-01T00:00:00.000Z',
      "'=key": 'x',
      at: "'@SUM(A1:A9)",
      comma: 'a, b',
      cr: "'\r=1",
      crlf: 'line\r\nbreak',
      'data.subscribed': 'a data key',
      dde: "'=cmd|' /C calc'!A0",
      eq: "'=1+2",
      lf: 'line\nbreak',
      minus: "'-2+3",
      negative: '-5',
      numericText: "'-5",
      plus: "'+31 6 1234",
      quote: 'say "hi"',
      safe: 'a=b',
      tab: "'\t=1",
    });
    // Quoted on the wire, exactly as RFC 4180 writes them.
    expect(res.body).toContain(',"say ""hi""",');
    expect(res.body).toContain(',"line\nbreak",');
  });

  it('filters by subscription', async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [{ email: 'in@example.com' }, { email: 'out@example.com', subscribed: false }]);
    expect(emailsOf((await exportOf(project, '?subscribed=true')).body)).toEqual(['in@example.com']);
    expect(emailsOf((await exportOf(project, '?subscribed=false')).body)).toEqual(['out@example.com']);
    expectRefused(await exportOf(project, '?subscribed=maybe'), 422, 'VALIDATION_ERROR');
  });
});

describe('GET /contacts/export: segments and conditions', () => {
  it("exports a DYNAMIC segment's live members with only their data keys as columns", async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [
      { email: 'p1@example.com', data: { plan: 'pro', seats: 3 } },
      { email: 'f1@example.com', data: { plan: 'free', trial: true } },
      { email: 'p2@example.com', data: { plan: 'pro' } },
    ]);
    const id = await segment(project, { name: 'Pro', condition: planIs('pro') });
    // Live: a contact that joins after the segment was made is exported too.
    await seedContacts(t.db.db, project.id, [{ email: 'p3@example.com', data: { plan: 'pro' }, createdAt: '2026-02-01T00:00:00Z' }]);
    const res = await exportOf(project, q({ segmentId: id }));
    expect(res.statusCode, res.body).toBe(200);
    expect(readCsv(res.body)[0]).toEqual(['email', 'subscribed', 'createdAt', 'plan', 'seats']);
    expect(emailsOf(res.body)).toEqual(['p1@example.com', 'p2@example.com', 'p3@example.com']);
  });

  it("exports a STATIC segment's member list", async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [{ email: 'a@example.com' }, { email: 'b@example.com' }, { email: 'c@example.com' }]);
    const id = await segment(project, { name: 'Hand-picked', type: 'STATIC' });
    const add = await t.app.inject({ method: 'POST', url: `/segments/${id}/members`, headers: bearer(project.secret), payload: { emails: ['c@example.com', 'a@example.com'] } });
    expect(add.statusCode, add.body).toBe(200);
    const res = await exportOf(project, q({ segmentId: id, format: 'ndjson' }));
    expect(readNdjson(res.body).map((c) => c.email)).toEqual(['a@example.com', 'c@example.com']);
  });

  it('exports the contacts matching a condition; with a segment, those in both', async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [
      { email: 'de-pro@example.com', data: { plan: 'pro', country: 'DE' } },
      { email: 'us-pro@example.com', data: { plan: 'pro', country: 'US' } },
      { email: 'de-free@example.com', data: { plan: 'free', country: 'DE' } },
    ]);
    const inDe = { logic: 'AND', groups: [{ filters: [{ field: 'data.country', operator: 'equals', value: 'DE' }] }] };
    expect(emailsOf((await exportOf(project, q({ condition: JSON.stringify(inDe) }))).body)).toEqual(['de-pro@example.com', 'de-free@example.com']);
    const pro = await segment(project, { name: 'Pro', condition: planIs('pro') });
    expect(emailsOf((await exportOf(project, q({ segmentId: pro, condition: JSON.stringify(inDe) }))).body)).toEqual(['de-pro@example.com']);
    // A condition may reference a segment, as a segment's may.
    const notPro = { logic: 'AND', groups: [{ filters: [{ field: `segment.${pro}`, operator: 'notMemberOfSegment' }] }] };
    expect(emailsOf((await exportOf(project, q({ condition: JSON.stringify(notPro) }))).body)).toEqual(['de-free@example.com']);
  });

  it('refuses an invalid condition with 422 naming the filter, before any byte of a file', async () => {
    const { project } = await newProject(t.app);
    await seedContacts(t.db.db, project.id, [{ email: 'a@example.com' }]);
    const bad = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'triggered' }] }] };
    const error = expectRefused(await exportOf(project, q({ condition: JSON.stringify(bad) })), 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([expect.objectContaining({ field: 'condition.groups.0.filters.0.operator', code: 'invalid_operator' })]);

    const notJson = expectRefused(await exportOf(project, q({ condition: '{logic: AND' })), 422, 'VALIDATION_ERROR');
    expect(notJson.errors).toEqual([expect.objectContaining({ field: 'condition', code: 'invalid_string' })]);

    const otherSegment = await segment((await newProject(t.app)).project, { name: 'Theirs', type: 'STATIC' });
    const ref = { logic: 'AND', groups: [{ filters: [{ field: `segment.${otherSegment}`, operator: 'memberOfSegment' }] }] };
    const unknown = expectRefused(await exportOf(project, q({ condition: JSON.stringify(ref) })), 422, 'VALIDATION_ERROR');
    expect(unknown.errors).toEqual([expect.objectContaining({ code: 'unknown_segment' })]);

    expectRefused(await exportOf(project, '?format=xlsx'), 422, 'VALIDATION_ERROR');
  });

  it("answers 404 for another project's segment, an unknown one and a malformed id", async () => {
    const { project } = await newProject(t.app);
    const other = (await newProject(t.app)).project;
    await seedContacts(t.db.db, other.id, [{ email: 'theirs@example.com', data: { plan: 'pro' } }]);
    const theirs = await segment(other, { name: 'Pro', condition: planIs('pro') });
    expectRefused(await exportOf(project, q({ segmentId: theirs })), 404, 'NOT_FOUND');
    expectRefused(await exportOf(project, q({ segmentId: '01930000-0000-7000-8000-000000000000' })), 404, 'NOT_FOUND');
    expectRefused(await exportOf(project, q({ segmentId: 'not-a-uuid' })), 404, 'NOT_FOUND');
    // Their owner gets it.
    expect(emailsOf((await exportOf(other, q({ segmentId: theirs }))).body)).toEqual(['theirs@example.com']);
  });

  it('refuses a CSV of more than 1,000 distinct data keys (422, use NDJSON), which NDJSON exports', async () => {
    const { project } = await newProject(t.app);
    const contacts = Array.from({ length: 6 }, (_, c) => ({
      email: `wide${c}@example.com`,
      data: Object.fromEntries(Array.from({ length: 170 }, (_, k) => [`c${c}k${k}`, k])),
    }));
    await seedContacts(t.db.db, project.id, contacts); // 1,020 keys
    const error = expectRefused(await exportOf(project), 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([expect.objectContaining({ field: 'format', code: 'too_big' })]);
    expect(error.suggestion).toMatch(/ndjson/);
    expect(readNdjson((await exportOf(project, '?format=ndjson')).body)).toHaveLength(6);
    // 1,000 keys exactly still make a CSV.
    await t.db.db.deleteFrom('contacts').where('project_id', '=', project.id).where('email', '=', 'wide5@example.com').execute();
    await seedContacts(t.db.db, project.id, [{ email: 'rest@example.com', data: Object.fromEntries(Array.from({ length: 150 }, (_, k) => [`r${k}`, k])) }]);
    const res = await exportOf(project);
    expect(res.statusCode).toBe(200);
    expect(readCsv(res.body)[0]).toHaveLength(1003);
  });
});

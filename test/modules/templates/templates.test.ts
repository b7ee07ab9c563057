import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateTemplate } from '../../../src/modules/templates/templates.repo.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { ISO_MS, templateClient, type TemplateJson } from './helpers.js';

let t: TestApp;
let c: ReturnType<typeof templateClient>;
beforeAll(async () => {
  t = await createTestApp();
  c = templateClient(t);
});
afterAll(() => t?.close());

const setup = () => c.setup();
const countTemplates = (projectId: string) => c.countTemplates(projectId);

describe('POST /templates', () => {
  it('creates a template with 201 and stores every field', async () => {
    const { project, from } = await setup();
    const payload = {
      name: 'Welcome',
      description: 'Sent after signup',
      subject: 'Hi {{name ?? "there"}}',
      body: '<p>Hello {{name}}</p>',
      from,
      fromName: 'The Team',
      replyTo: 'support@example.com',
      type: 'TRANSACTIONAL',
    };
    const res = await c.call(project, 'POST', '/templates', payload);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<TemplateJson>();
    expect(body).toEqual({ ...payload, id: expect.any(String), projectId: project.id, createdAt: expect.stringMatching(ISO_MS), updatedAt: body.createdAt });
    expect(await c.rowOf(body.id)).toMatchObject({
      project_id: project.id,
      name: 'Welcome',
      description: 'Sent after signup',
      subject: 'Hi {{name ?? "there"}}',
      body: '<p>Hello {{name}}</p>',
      from_email: from,
      from_name: 'The Team',
      reply_to: 'support@example.com',
      type: 'TRANSACTIONAL',
    });
  });

  it('defaults type to MARKETING, texts to empty and fromName/replyTo to null', async () => {
    const { project, from } = await setup();
    const body = await c.create(project, { from: `  ${from} ` });
    expect(body).toMatchObject({ name: '', description: '', subject: '', body: '', from, fromName: null, replyTo: null, type: 'MARKETING' });
  });

  it.each([
    ['absent', {}],
    ['null', { from: null }],
    ['empty', { from: '' }],
    ['blank', { from: '   ' }],
  ])('answers the legacy 400 {error} when from is %s', async (_label, extra) => {
    const { project } = await setup();
    const res = await c.call(project, 'POST', '/templates', { name: 'x', subject: 's', body: 'b', ...extra });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: 'From address is required' });
    expect(await countTemplates(project.id)).toBe(0);
  });

  it('answers 403 with code INTERNAL_SERVER_ERROR when the sender domain is not verified', async () => {
    const { project } = await setup();
    const pending = await c.verifyDomain(project, `pending-${randomUUID().slice(0, 8)}.test`, false);
    const other = (await newProject(t.app)).project;
    const othersDomain = await c.verifyDomain(other);
    for (const from of ['a@unknown-domain.test', `a@${pending}`, `a@${othersDomain}`]) {
      const res = await c.call(project, 'POST', '/templates', { from, subject: 's' });
      const error = expectEnvelope(res, 403, 'INTERNAL_SERVER_ERROR');
      expect(error.message).toMatch(/not verified/);
      expect(error.message).toContain(from.split('@')[1]);
    }
    expect(await countTemplates(project.id)).toBe(0);
  });

  it('compares the sender domain case-insensitively', async () => {
    const { project, domain } = await setup();
    const body = await c.create(project, { from: `News@${domain.toUpperCase()}` });
    expect(body.from).toBe(`News@${domain.toUpperCase()}`);
  });

  it.each([
    ['from', 'a malformed address', { from: 'not-an-email' }, 'invalid_string'],
    ['replyTo', 'a malformed address', { replyTo: 'nope@' }, 'invalid_string'],
    ['type', 'an unknown type', { type: 'NEWSLETTER' }, 'invalid_enum_value'],
    ['name', 'over 255 characters', { name: 'n'.repeat(256) }, 'too_big'],
    ['description', 'over 2000 characters', { description: 'd'.repeat(2001) }, 'too_big'],
    ['subject', 'over 998 characters', { subject: 's'.repeat(999) }, 'too_big'],
    ['subject', 'CR/LF (header injection)', { subject: 'Hello\r\nBcc: victim@example.com' }, 'invalid_string'],
    ['subject', 'a bare LF', { subject: 'line\nbreak' }, 'invalid_string'],
    ['fromName', 'CR/LF (header injection)', { fromName: 'Evil\r\nBcc: x@y.z' }, 'invalid_string'],
    ['fromName', 'over 255 characters', { fromName: 'f'.repeat(256) }, 'too_big'],
    ['name', 'a NUL character (PostgreSQL text cannot hold it)', { name: 'nul\u0000byte' }, 'invalid_string'],
    ['body', 'a NUL character', { body: '<p>nul\u0000</p>' }, 'invalid_string'],
    ['name', 'a number', { name: 42 }, 'invalid_type'],
  ])('answers 422 on field %s for %s', async (field, _label, extra, code) => {
    const { project, from } = await setup();
    const res = await c.call(project, 'POST', '/templates', { from, ...extra });
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.message).toBe('Request validation failed');
    expect(error.errors).toEqual([expect.objectContaining({ field, code, message: expect.any(String) })]);
    expect(await countTemplates(project.id)).toBe(0);
  });

  it('accepts limits exactly: subject of 998, name of 255, a body of 1 MiB of UTF-8', async () => {
    const { project, from } = await setup();
    const body = 'é'.repeat(512 * 1024);
    const created = await c.create(project, { from, subject: 's'.repeat(998), name: 'n'.repeat(255), body });
    expect((await c.rowOf(created.id))?.body).toBe(body);
  });

  it('answers 422 on body (not 413) for a body one byte over 1 MiB', async () => {
    const { project, from } = await setup();
    const res = await c.call(project, 'POST', '/templates', { from, body: `${'é'.repeat(512 * 1024)}a` });
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([expect.objectContaining({ field: 'body', code: 'too_big' })]);
  });

  it('validates the body before checking the sender domain (422, not 403)', async () => {
    const { project } = await setup();
    const res = await c.call(project, 'POST', '/templates', { from: 'a@unverified.test', subject: 'a\nb' });
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
  });

  it('rejects a public key with 401 INVALID_API_KEY and takes the session cookie with X-Project-Id', async () => {
    const { user, project } = await newProject(t.app);
    const domain = await c.verifyDomain(project);
    const pk = await t.app.inject({ method: 'POST', url: '/templates', headers: bearer(project.public), payload: { from: `a@${domain}` } });
    expectEnvelope(pk, 401, 'INVALID_API_KEY');
    const res = await t.app.inject({
      method: 'POST',
      url: '/templates',
      headers: { cookie: user.cookie, 'x-project-id': project.id },
      payload: { from: `a@${domain}`, name: 'From the dashboard' },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json<TemplateJson>().projectId).toBe(project.id);
  });
});

describe('GET /templates/:id', () => {
  it('answers the template', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from, name: 'One' });
    const res = await c.call(project, 'GET', `/templates/${created.id}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual(created);
  });

  it('answers 404 for another project\'s template, an unknown id and a malformed id', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const other = (await newProject(t.app)).project;
    for (const [p, id] of [[other, created.id], [project, randomUUID()], [project, 'not-a-uuid'], [project, `${created.id}x`]] as const) {
      expectEnvelope(await c.call(p, 'GET', `/templates/${id}`), 404, 'NOT_FOUND');
    }
  });
});

describe('PATCH /templates/:id', () => {
  it('changes only the given fields and bumps updatedAt', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from, name: 'Old', subject: 'S', body: 'B', fromName: 'Team', replyTo: 'r@example.com' });
    const res = await c.call(project, 'PATCH', `/templates/${created.id}`, { name: 'New', type: 'HEADLESS' });
    expect(res.statusCode, res.body).toBe(200);
    const updated = res.json<TemplateJson>();
    expect(updated).toEqual({ ...created, name: 'New', type: 'HEADLESS', updatedAt: expect.stringMatching(ISO_MS) });
    expect(updated.updatedAt > created.updatedAt).toBe(true);
    expect(await c.rowOf(created.id)).toMatchObject({ name: 'New', type: 'HEADLESS', subject: 'S', body: 'B', from_email: from, from_name: 'Team', reply_to: 'r@example.com' });
  });

  it('clears fromName and replyTo with null or an empty string', async () => {
    const { project, from } = await setup();
    const a = await c.create(project, { from, fromName: 'Team', replyTo: 'r@example.com' });
    const b = await c.create(project, { from, fromName: 'Team', replyTo: 'r@example.com' });
    for (const [tpl, value] of [[a, null], [b, '']] as const) {
      const res = await c.call(project, 'PATCH', `/templates/${tpl.id}`, { fromName: value, replyTo: value });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ fromName: null, replyTo: null });
      expect(await c.rowOf(tpl.id)).toMatchObject({ from_name: null, reply_to: null });
    }
  });

  it('writes nothing for a PATCH that changes nothing (updatedAt stays)', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from, name: 'Same' });
    for (const payload of [{}, { name: 'Same', from }]) {
      const res = await c.call(project, 'PATCH', `/templates/${created.id}`, payload);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual(created);
    }
  });

  it('re-checks the domain of a new from: 403 INTERNAL_SERVER_ERROR and no change when unverified', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const res = await c.call(project, 'PATCH', `/templates/${created.id}`, { from: 'x@unverified.test', name: 'Changed' });
    expect(expectEnvelope(res, 403, 'INTERNAL_SERVER_ERROR').message).toMatch(/unverified\.test is not verified/);
    expect(await c.rowOf(created.id)).toMatchObject({ from_email: from, name: '' });

    const second = await c.verifyDomain(project);
    const ok = await c.call(project, 'PATCH', `/templates/${created.id}`, { from: `hello@${second}` });
    expect(ok.statusCode, ok.body).toBe(200);
    expect((await c.rowOf(created.id))?.from_email).toBe(`hello@${second}`);
  });

  it('does not re-check an unchanged from, so a template whose domain lapsed stays editable', async () => {
    const { project, domain, from } = await setup();
    const created = await c.create(project, { from });
    await t.db.db.updateTable('domains').set({ verified: false }).where('project_id', '=', project.id).where('domain', '=', domain).execute();
    const res = await c.call(project, 'PATCH', `/templates/${created.id}`, { from, subject: 'Edited' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ from, subject: 'Edited' });
  });

  it.each([
    ['from', 'null (from cannot be removed)', { from: null }, 'invalid_type'],
    ['from', 'an empty string', { from: '' }, 'invalid_string'],
    ['subject', 'a line break', { subject: 'a\nb' }, 'invalid_string'],
    ['replyTo', 'a malformed address', { replyTo: 'bad' }, 'invalid_string'],
    ['type', 'a lower-case type', { type: 'marketing' }, 'invalid_enum_value'],
    ['name', 'null', { name: null }, 'invalid_type'],
  ])('answers 422 on field %s for %s, changing nothing', async (field, _label, payload, code) => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const error = expectEnvelope(await c.call(project, 'PATCH', `/templates/${created.id}`, payload), 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([expect.objectContaining({ field, code })]);
    expect(await c.rowOf(created.id)).toMatchObject({ from_email: from, updated_at: new Date(created.updatedAt) });
  });

  it('answers 404 for another project\'s template and a malformed id', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from, name: 'Mine' });
    const other = (await newProject(t.app)).project;
    expectEnvelope(await c.call(other, 'PATCH', `/templates/${created.id}`, { name: 'Stolen' }), 404, 'NOT_FOUND');
    expectEnvelope(await c.call(project, 'PATCH', '/templates/123', { name: 'x' }), 404, 'NOT_FOUND');
    expect((await c.rowOf(created.id))?.name).toBe('Mine');
  });

  it("scopes the write itself to the project, not only the read before it", async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from, name: 'Mine' });
    const other = (await newProject(t.app)).project;
    expect(await updateTemplate(t.db.db, other.id, created.id, { name: 'Stolen' })).toBeUndefined();
    expect((await c.rowOf(created.id))?.name).toBe('Mine');
  });
});

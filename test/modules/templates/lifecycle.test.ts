import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject } from '../../helpers/accounts.js';
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

describe('DELETE /templates/:id', () => {
  it('answers 204 with an empty body; emails sent with it keep their rows', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const email = await t.db.db
      .insertInto('emails')
      .values({ project_id: project.id, source: 'SEND', type: 'MARKETING', template_id: created.id, to_email: 'to@example.com', from_email: from, subject: 's', html: 'h', message_id: `<${randomUUID()}@test>` })
      .returning('id')
      .executeTakeFirstOrThrow();
    const res = await c.call(project, 'DELETE', `/templates/${created.id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expect(await c.rowOf(created.id)).toBeUndefined();
    const kept = await t.db.db.selectFrom('emails').select(['id', 'template_id']).where('id', '=', email.id).executeTakeFirst();
    expect(kept).toEqual({ id: email.id, template_id: null });
    expectEnvelope(await c.call(project, 'GET', `/templates/${created.id}`), 404, 'NOT_FOUND');
    expectEnvelope(await c.call(project, 'DELETE', `/templates/${created.id}`), 404, 'NOT_FOUND');
  });

  it('answers 404 for another project\'s template (which stays) and a malformed id', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const other = (await newProject(t.app)).project;
    expectEnvelope(await c.call(other, 'DELETE', `/templates/${created.id}`), 404, 'NOT_FOUND');
    expectEnvelope(await c.call(project, 'DELETE', '/templates/nope'), 404, 'NOT_FOUND');
    expect(await c.rowOf(created.id)).toBeDefined();
  });
});

describe('POST /templates/:id/duplicate', () => {
  it('answers 201 with a new template named "<name> (copy)", every other field copied', async () => {
    const { project, from } = await setup();
    const original = await c.create(project, { from, name: 'Promo', description: 'd', subject: 's', body: 'b', fromName: 'F', replyTo: 'r@example.com', type: 'HEADLESS' });
    const res = await c.call(project, 'POST', `/templates/${original.id}/duplicate`);
    expect(res.statusCode, res.body).toBe(201);
    const copy = res.json<TemplateJson>();
    expect(copy.id).not.toBe(original.id);
    expect(copy).toEqual({ ...original, id: copy.id, name: 'Promo (copy)', createdAt: expect.stringMatching(ISO_MS), updatedAt: expect.stringMatching(ISO_MS) });
    expect(await c.rowOf(copy.id)).toMatchObject({ project_id: project.id, name: 'Promo (copy)', from_email: from, type: 'HEADLESS' });
    expect((await c.rowOf(original.id))?.name).toBe('Promo');
  });

  it('shortens a long name so the copy stays within 255 characters', async () => {
    const { project, from } = await setup();
    const original = await c.create(project, { from, name: 'n'.repeat(255) });
    const copy = (await c.call(project, 'POST', `/templates/${original.id}/duplicate`)).json<TemplateJson>();
    expect(copy.name).toBe(`${'n'.repeat(248)} (copy)`);
  });

  it('answers 404 for another project\'s template and a malformed id', async () => {
    const { project, from } = await setup();
    const original = await c.create(project, { from });
    const other = (await newProject(t.app)).project;
    expectEnvelope(await c.call(other, 'POST', `/templates/${original.id}/duplicate`), 404, 'NOT_FOUND');
    expectEnvelope(await c.call(project, 'POST', '/templates/zzz/duplicate'), 404, 'NOT_FOUND');
    expect(await countTemplates(other.id)).toBe(0);
    expect(await countTemplates(project.id)).toBe(1);
  });
});

describe('GET /templates/:id/usage', () => {
  it('answers {templateId, campaigns, workflows}, empty until those modules exist', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const res = await c.call(project, 'GET', `/templates/${created.id}/usage`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ templateId: created.id, campaigns: [], workflows: [] });
  });

  it('answers 404 for another project\'s template and a malformed id', async () => {
    const { project, from } = await setup();
    const created = await c.create(project, { from });
    const other = (await newProject(t.app)).project;
    expectEnvelope(await c.call(other, 'GET', `/templates/${created.id}/usage`), 404, 'NOT_FOUND');
    expectEnvelope(await c.call(project, 'GET', '/templates/1/usage'), 404, 'NOT_FOUND');
  });
});

describe('OpenAPI', () => {
  it('documents the seven template routes', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const paths = res.json<{ paths: Record<string, Record<string, unknown>> }>().paths;
    expect(Object.keys(paths['/templates'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/templates/{id}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch']);
    expect(Object.keys(paths['/templates/{id}/duplicate'] ?? {})).toEqual(['post']);
    expect(Object.keys(paths['/templates/{id}/usage'] ?? {})).toEqual(['get']);
  });
});

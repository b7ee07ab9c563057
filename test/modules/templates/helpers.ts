import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from '../../helpers/app.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';

export interface TemplateJson {
  id: string;
  name: string;
  description: string;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';
  projectId: string;
  createdAt: string;
  updatedAt: string;
}

export interface TemplateListJson {
  data: TemplateJson[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Request helpers bound to one test app. */
export function templateClient(t: TestApp) {
  const call = (p: TestProject, method: Method, url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(p.secret), ...(payload !== undefined && { payload }) });

  /** A verified sender domain for the project, inserted directly (no DNS involved). */
  const verifyDomain = async (p: TestProject, domain = `verified-${randomUUID().slice(0, 8)}.test`, verified = true) => {
    await t.db.db
      .insertInto('domains')
      .values({ project_id: p.id, domain, dkim_selector: 'sel', dkim_public_key: 'pub', dkim_private_key: 'priv', verified })
      .execute();
    return domain;
  };

  const create = async (p: TestProject, payload: Record<string, unknown>): Promise<TemplateJson> => {
    const res = await call(p, 'POST', '/templates', payload);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<TemplateJson>();
  };

  const list = async (p: TestProject, query = ''): Promise<TemplateListJson> => {
    const res = await call(p, 'GET', `/templates${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<TemplateListJson>();
  };

  const rowOf = (id: string) => t.db.db.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();

  /** A fresh project with a verified sender domain, and a sender address on it. */
  const setup = async (): Promise<{ project: TestProject; domain: string; from: string }> => {
    const { project } = await newProject(t.app);
    const domain = await verifyDomain(project);
    return { project, domain, from: `news@${domain}` };
  };

  const countTemplates = async (projectId: string) =>
    (await t.db.db.selectFrom('templates').select('id').where('project_id', '=', projectId).execute()).length;

  return { call, verifyDomain, create, list, rowOf, setup, countTemplates };
}

/** An ISO 8601 UTC time with milliseconds, as the API answers. */
export const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import type { TestApp } from '../../helpers/app.js';

export interface WorkflowJson {
  id: string;
  name: string;
  description: string;
  triggerType: string;
  triggerConfig: { eventName: string };
  enabled: boolean;
  allowReentry: boolean;
  createdAt: string;
  updatedAt: string;
}
export interface StepJson {
  id: string;
  type: string;
  name: string;
  config: Record<string, unknown>;
  position: { x: number; y: number };
  template?: { id: string; name: string; subject: string; type: string } | null;
  stats?: Record<string, number>;
}
export interface TransitionJson {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: string | null;
}
export interface DetailJson extends WorkflowJson {
  steps: StepJson[];
  transitions: TransitionJson[];
}
export interface ErrorJson {
  error: { code: string; message: string; errors?: { field: string; code: string; message: string }[]; details?: Record<string, unknown> };
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Request helpers for the workflow definition routes, bound to one test app. */
export function workflowClient(t: TestApp) {
  const call = (p: TestProject, method: Method, url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(p.secret), ...(payload !== undefined && { payload }) });

  const create = async (p: TestProject, body: object = {}): Promise<WorkflowJson> => {
    const res = await call(p, 'POST', '/workflows', { name: 'Welcome', eventName: 'signed_up', ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<WorkflowJson>();
  };
  const detail = async (p: TestProject, id: string): Promise<DetailJson> => {
    const res = await call(p, 'GET', `/workflows/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<DetailJson>();
  };
  const trigger = async (p: TestProject, id: string): Promise<StepJson> => {
    const step = (await detail(p, id)).steps.find((s) => s.type === 'TRIGGER');
    if (!step) throw new Error('no trigger');
    return step;
  };
  const addStep = async (p: TestProject, wfId: string, body: object): Promise<StepJson> => {
    const res = await call(p, 'POST', `/workflows/${wfId}/steps`, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<StepJson>();
  };
  const link = async (p: TestProject, wfId: string, from: string, to: string, extra: object = {}): Promise<TransitionJson> => {
    const res = await call(p, 'POST', `/workflows/${wfId}/transitions`, { fromStepId: from, toStepId: to, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<TransitionJson>();
  };
  /** A template row of the project, inserted directly (no sender domain needed). */
  const template = async (p: TestProject, name = 'Welcome mail'): Promise<string> => {
    const row = await t.db.db
      .insertInto('templates')
      .values({ project_id: p.id, name, subject: 'Hi {{name}}', body: '<p>Hi</p>', from_email: `hello@${randomUUID().slice(0, 8)}.test`, from_name: null, reply_to: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  };
  const fresh = async () => (await newProject(t.app)).project;
  const delay = { type: 'DELAY', config: { amount: 1, unit: 'hours' } };
  return { call, create, detail, trigger, addStep, link, template, fresh, delay };
}

export const fieldsOf = (body: ErrorJson) => (body.error.errors ?? []).map((e) => e.field);

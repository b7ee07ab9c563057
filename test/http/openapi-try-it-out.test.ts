import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { newProject, type SignedInUser, type TestProject } from '../helpers/accounts.js';
import { type Doc, type Operation, operations, type SecurityScheme } from './openapi-doc.js';

/**
 * "Try it out" in /docs without a browser: each operation is called the way Swagger UI would
 * call it after Authorize, carrying exactly the schemes of one of its security requirements,
 * built from the scheme definitions (bearer → Authorization, apiKey → its header or cookie).
 */
let t: TestApp;
let doc: Doc;
let user: SignedInUser;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<Doc>();
  ({ user, project } = await newProject(t.app));
});
afterAll(() => t.close());

/** What a user types into Authorize, per scheme. */
const authorizeValues = () => ({
  publicKey: project.public,
  secretKey: project.secret,
  session: user.cookie.slice('session='.length),
  projectId: project.id,
});

function credentials(requirement: Record<string, string[]>): Record<string, string> {
  const values: Record<string, string> = authorizeValues();
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const name of Object.keys(requirement)) {
    const scheme: SecurityScheme | undefined = doc.components.securitySchemes[name];
    const value = values[name];
    if (!scheme || value === undefined) throw new Error(`no scheme or value for ${name}`);
    if (scheme.type === 'http' && scheme.scheme === 'bearer') headers.authorization = `Bearer ${value}`;
    else if (scheme.type === 'apiKey' && scheme.in === 'cookie') cookies.push(`${scheme.name}=${value}`);
    else if (scheme.type === 'apiKey' && scheme.in === 'header' && scheme.name) headers[scheme.name.toLowerCase()] = value;
    else throw new Error(`scheme ${name} cannot be attached`);
  }
  if (cookies.length) headers.cookie = cookies.join('; ');
  return headers;
}

/** The path with its parameters filled: ids that match nothing (404 at worst), our own project id. */
function urlOf(path: string, op: Operation): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const schema = op.parameters?.find((p) => p.in === 'path' && p.name === name)?.schema;
    if (name === 'projectId') return project.id;
    if (schema?.format === 'email') return 'nobody@example.com';
    return randomUUID();
  });
}

const inject = (method: string, url: string, headers: Record<string, string>) =>
  t.app.inject({ method: method.toUpperCase() as 'GET', url, headers });

describe('Try it out with the documented credentials', () => {
  it('every operation, with each of its security requirements, gets past authentication', async () => {
    const failures: string[] = [];
    let calls = 0;
    for (const { method, path, op } of operations(doc)) {
      const requirements = op.security?.length ? op.security : [{}];
      for (const requirement of requirements) {
        const res = await inject(method, urlOf(path, op), credentials(requirement));
        calls++;
        // 401: credentials missing or refused; 403: a session that may not act on the project.
        if (res.statusCode === 401 || res.statusCode === 403) failures.push(`${method} ${path} [${Object.keys(requirement).join('+')}] → ${res.statusCode} ${res.body}`);
      }
    }
    expect(failures).toEqual([]);
    expect(calls).toBeGreaterThan(100);
  });

  it('the requirements are needed: without credentials every secured operation is 401', async () => {
    const open: string[] = [];
    for (const { method, path, op } of operations(doc)) {
      if (!op.security?.length) continue;
      const res = await inject(method, urlOf(path, op), {});
      if (res.statusCode !== 401) open.push(`${method} ${path} → ${res.statusCode}`);
    }
    expect(open).toEqual([]);
  });

  it('one requirement\'s schemes alone are not another\'s: pk_ on a secret route, sk_ on the public one, the cookie without X-Project-Id', async () => {
    const contacts = await inject('get', '/contacts', { authorization: `Bearer ${project.public}` });
    const track = await t.app.inject({ method: 'POST', url: '/v1/track', headers: { authorization: `Bearer ${project.secret}` }, payload: { email: 'a@example.com', event: 'x' } });
    const cookieOnly = await inject('get', '/contacts', { cookie: user.cookie });
    expect([contacts.statusCode, track.statusCode, cookieOnly.statusCode]).toEqual([401, 401, 401]);
  });
});

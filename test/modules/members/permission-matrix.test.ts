import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSummary } from '../../../src/app.js';
import { Roles } from '../../../src/http/context.js';
import { newProject, signUp, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { addMember } from './helpers.js';

/**
 * The permission matrix (issue 11 point 4): every project-scoped route, called with the session
 * cookie of an OWNER, an ADMIN, a MEMBER and a signed-in user with no role in the project.
 *
 * Who may call a route is declared next to it (`config.roles`, src/http/context.ts `Roles`) and
 * enforced by the auth hook. This test walks the registered routes (`app.routeCatalog`), so a
 * route added later is walked too; a project route under `/projects/:id` with a session and no
 * declaration fails here. A request that passes authentication is answered 299 by a test-only
 * preValidation hook, before any handler runs: the walk checks the gate without side effects
 * (no project deleted or reset by the OWNER's call). The finer rules inside handlers (an ADMIN
 * never touches OWNERs, the last OWNER, one's own role) are tested in roles.test.ts.
 */

const PASSED = 299;

/**
 * DESIGN §4 as rules over "METHOD /url": what each role must be refused. Billing is the OWNER's:
 * every billing action (checkout, portal, caps) is OWNER-only; its read-only views are also
 * open to ADMINs (docs/billing.md), never to MEMBERs.
 */
const OWNER_ONLY = [/^DELETE \/users\/@me\/projects\/:id$/, /\/reset$/, /^(POST|PUT|PATCH|DELETE) .*(billing|checkout)/];
const NOT_MEMBER = [
  /billing|checkout|invoices/,
  /^PATCH \/users\/@me\/projects\/:id$/,
  /regenerate-keys/,
  /webhook-secret/,
  /webhook-endpoints/,
  /^(POST|PATCH) \/projects\/:id\/members/,
  /\/invitations\//,
];

let t: TestApp;
let project: TestProject;
let users: Record<'OWNER' | 'ADMIN' | 'MEMBER' | 'NONE', SignedInUser>;

function probe(app: FastifyInstance): void {
  // A resource route that declares roles (as an admin-only resource would): sessions are checked against it.
  app.get('/__test/admins-only', { config: { roles: Roles.admins } }, async () => ({}));
  app.addHook('preValidation', async (request, reply) => {
    if (request.headers['x-permission-probe']) return reply.code(PASSED).send({ passed: true });
  });
}

beforeAll(async () => {
  t = await createTestApp({ extend: probe });
  const created = await newProject(t.app);
  project = created.project;
  users = {
    OWNER: created.user,
    ADMIN: await addMember(t.app, created.user, project.id, 'ADMIN'),
    MEMBER: await addMember(t.app, created.user, project.id, 'MEMBER'),
    NONE: await signUp(t.app),
  };
});
afterAll(() => t.close());

const key = (route: RouteSummary) => `${route.method} ${route.url}`;
/** A project route of the session: the project is in its path (`/projects/:id`). */
const inPath = (route: RouteSummary) => route.auth === 'user' && /\/projects\/:[^/]+/.test(route.url);
/** A resource route: the session names the project with X-Project-Id. */
const byHeader = (route: RouteSummary) => route.auth === 'secret';
const projectRoutes = () => t.app.routeCatalog.filter((r) => inPath(r) || byHeader(r));

/** The URL with the test project as its `:id` (path routes) and random ids elsewhere. */
function concrete(route: RouteSummary): string {
  const url = inPath(route) ? route.url.replace(/\/projects\/:[^/]+/, `/projects/${project.id}`) : route.url;
  return url.replace(/:[A-Za-z]+/g, () => randomUUID()).replace(/\*$/, 'x');
}

function call(route: RouteSummary, user: SignedInUser) {
  const headers: Record<string, string> = { cookie: user.cookie, 'x-permission-probe': '1' };
  if (byHeader(route)) headers['x-project-id'] = project.id;
  return t.app.inject({ method: route.method as 'GET', url: concrete(route), headers });
}

describe('permission matrix', () => {
  it('finds the project routes of every kind (resource, settings, members)', () => {
    const keys = projectRoutes().map(key);
    expect(keys).toEqual(expect.arrayContaining(['GET /contacts', 'GET /__test/admins-only', 'PATCH /users/@me/projects/:id', 'POST /projects/:id/members']));
  });

  it('has a role declaration on every project route in a path (config.roles), with OWNER always allowed', () => {
    const undeclared = t.app.routeCatalog.filter((r) => inPath(r) && !r.roles).map(key);
    expect(undeclared, 'declare config.roles (Roles.members | admins | owners from src/http/context.ts) on these routes').toEqual([]);
    const ownerRefused = projectRoutes().filter((r) => r.roles && !r.roles.includes('OWNER')).map(key);
    expect(ownerRefused).toEqual([]);
  });

  it('declares DESIGN §4: delete, reset and billing for OWNERs; settings, keys, secrets and members not for MEMBERs', () => {
    const wrong: string[] = [];
    for (const route of projectRoutes()) {
      const roles = route.roles ?? ['OWNER', 'ADMIN', 'MEMBER'];
      if (OWNER_ONLY.some((re) => re.test(key(route))) && roles.some((r) => r !== 'OWNER')) wrong.push(`${key(route)}: OWNER only, declared ${roles.join(',')}`);
      if (NOT_MEMBER.some((re) => re.test(key(route))) && roles.includes('MEMBER')) wrong.push(`${key(route)}: not MEMBER, declared ${roles.join(',')}`);
    }
    expect(wrong).toEqual([]);
  });

  it('lets each role through exactly the routes declared for it, and no one without a role', async () => {
    const mismatches: string[] = [];
    for (const route of projectRoutes()) {
      const allowed = route.roles ?? ['OWNER', 'ADMIN', 'MEMBER'];
      for (const [who, user] of Object.entries(users)) {
        const res = await call(route, user);
        const code: string | undefined = res.statusCode === PASSED ? undefined : res.json().error?.code;
        const expected =
          who === 'NONE'
            ? // A stranger as the app answers for a foreign project: 404 where the project is in the path, 403 for X-Project-Id.
              inPath(route) ? [404, 'NOT_FOUND'] : [403, 'FORBIDDEN']
            : allowed.some((r) => r === who)
              ? [PASSED, undefined]
              : [403, 'FORBIDDEN'];
        if (res.statusCode !== expected[0] || code !== expected[1]) mismatches.push(`${key(route)} as ${who}: ${res.statusCode} ${code ?? ''}, expected ${expected.join(' ')}`);
      }
    }
    expect(mismatches).toEqual([]);
  }, 120_000);

  it('documents 403 in the OpenAPI operation of every route that declares roles', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>();
    // Routes hidden from the document (billing while it is off) have no operation to check.
    const operation = (r: RouteSummary) => doc.paths[r.url.replace(/:([A-Za-z]+)/g, '{$1}')]?.[r.method.toLowerCase()];
    const documented = t.app.routeCatalog.filter((r) => r.roles && operation(r));
    expect(documented.map(key)).toContain('PATCH /projects/:id/members/:userId');
    const undocumented = documented.filter((r) => !operation(r)?.responses['403']).map(key);
    expect(undocumented).toEqual([]);
    const invite = doc.paths['/projects/{id}/members']?.post?.responses ?? {};
    expect(Object.keys(invite)).toEqual(expect.arrayContaining(['201', '403', '404', '409', '422', '429']));
  });

  it('accepts the project\'s secret key on resource routes whatever they declare (keys are the project\'s API access)', async () => {
    const declared = projectRoutes().filter((r) => byHeader(r));
    for (const route of declared) {
      const res = await t.app.inject({ method: route.method as 'GET', url: concrete(route), headers: { authorization: `Bearer ${project.secret}`, 'x-permission-probe': '1' } });
      expect(res.statusCode, key(route)).toBe(PASSED);
    }
  });
});

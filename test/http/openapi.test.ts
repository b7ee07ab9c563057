import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZodType } from 'zod';
import { ErrorEnvelopeSchema } from '../../src/http/openapi-components.js';
import { ROUTE_ERRORS, LEGACY_400_ROUTES, MULTIPART_BODIES } from '../../src/http/openapi-operations.js';
import { SendBody, SendResponse } from '../../src/modules/emails/send.schema.js';
import { TrackBody, TrackResponse } from '../../src/modules/events/events.schema.js';
import { VerifyBody, VerifyResponse } from '../../src/modules/verify/verify.schema.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { type Doc, operations, ref } from './openapi-doc.js';

let t: TestApp;
let doc: Doc;
beforeAll(async () => {
  t = await createTestApp();
  doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<Doc>();
});
afterAll(() => t.close());

const ENVELOPE = ref('ErrorEnvelope');
const TREE = ref('ConditionTree');

describe('API docs', () => {
  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/auth/signup', '/users/@me/projects', '/users/@me/projects/{id}/regenerate-keys', '/health']));
    const body = doc.paths['/auth/signup']?.post?.requestBody?.content['application/json']?.schema;
    expect(body?.required).toEqual(['email', 'password']);
    expect(body?.properties?.password?.minLength).toBe(8);
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/docs'))).toBe(false);
  });

  it('lists its component schemas by name: the same document whatever order their modules loaded in', () => {
    const names = Object.keys(doc.components.schemas);
    expect(names.length).toBeGreaterThan(50);
    expect(names).toEqual([...names].sort()); // code-unit order, as `<` compares
  });

  it('serves a browsable docs page without credentials', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs' });
    const page = res.statusCode === 302 ? await t.app.inject({ method: 'GET', url: String(res.headers.location) }) : res;
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toMatch(/swagger/i);
  });
});

describe('security from config.auth', () => {
  // What auth.ts accepts for each mode, written out rather than computed by the code under test.
  const EXPECTED = {
    none: [],
    user: [{ session: [] }],
    public: [{ publicKey: [] }],
    secret: [{ secretKey: [] }, { session: [], projectId: [] }],
  };

  it('defines schemes Swagger UI can attach: two bearer keys, the session cookie, X-Project-Id', () => {
    expect(doc.components.securitySchemes).toMatchObject({
      publicKey: { type: 'http', scheme: 'bearer' },
      secretKey: { type: 'http', scheme: 'bearer' },
      session: { type: 'apiKey', in: 'cookie', name: 'session' },
      projectId: { type: 'apiKey', in: 'header', name: 'X-Project-Id' },
    });
  });

  it('gives every documented operation the security of the route that enforces it', () => {
    const byRoute = new Map(t.app.routeCatalog.map((r) => [`${r.method} ${r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`, r.auth]));
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(60);
    const seen = new Set<string>();
    for (const { method, path, op } of ops) {
      const auth = byRoute.get(`${method.toUpperCase()} ${path}`);
      expect(auth, `${method} ${path} is a registered route`).toBeDefined();
      expect(op.security, `${method} ${path} (${auth})`).toEqual(EXPECTED[auth as keyof typeof EXPECTED]);
      seen.add(auth as string);
    }
    expect([...seen].sort()).toEqual(['none', 'public', 'secret', 'user']);
  });
});

describe('operations', () => {
  it('have unique operationIds derived from method and path (GET and POST /auth/logout differ)', () => {
    const ids = operations(doc).map(({ op }) => op.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/v1/send']?.post?.operationId).toBe('postV1Send');
    expect(doc.paths['/contacts/{id}']?.get?.operationId).toBe('getContactsById');
    expect(doc.paths['/auth/logout']?.get?.operationId).toBe('getAuthLogout');
    expect(doc.paths['/auth/logout']?.post?.operationId).toBe('postAuthLogout');
  });

  it('document the errors that apply, each with the one envelope schema', () => {
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path]?.[method]?.responses ?? {});
    for (const { method, path, op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const schema = response.content?.['application/json']?.schema;
        expect(schema?.$ref === ENVELOPE || schema?.anyOf?.some((s) => s.$ref === ENVELOPE), `${method} ${path} ${status}`).toBe(true);
        expect(response.description).not.toBe('Default Response');
      }
      expect(statuses(path, method), `${method} ${path}`).toContain('500');
      if (op.security?.length) expect(statuses(path, method), `${method} ${path}`).toContain('401');
      if (path.includes('{')) expect(statuses(path, method), `${method} ${path}`).toContain('404');
      if (op.requestBody || op.parameters?.length) expect(statuses(path, method), `${method} ${path}`).toContain('422');
    }
    expect(statuses('/v1/send', 'post')).toEqual(expect.arrayContaining(['409', '429', '401', '422']));
    expect(statuses('/auth/login', 'post')).toEqual(expect.arrayContaining(['401', '429', '422']));
    expect(statuses('/campaigns/{id}/send', 'post')).toContain('409');
    // Session-only routes have no project to count against (rate-limit.ts), so no 429.
    expect(statuses('/users/@me', 'get')).not.toContain('429');
    expect(statuses('/health', 'get')).not.toContain('401');
    const legacy = doc.paths['/contacts']?.post?.responses['400']?.content?.['application/json']?.schema;
    expect(legacy?.anyOf?.map((s) => s.$ref)).toEqual([ENVELOPE, ref('LegacyError')]);
  });

  it('name only existing routes in their per-route tables', () => {
    const keys = new Set(operations(doc).map(({ method, path }) => `${method.toUpperCase()} ${path}`));
    for (const key of [...Object.keys(ROUTE_ERRORS), ...LEGACY_400_ROUTES, ...Object.keys(MULTIPART_BODIES)]) {
      expect(keys, key).toContain(key.replace(/:([A-Za-z0-9_]+)/g, '{$1}'));
    }
  });

  it('ErrorEnvelope includes the top-level message and matches real error answers', async () => {
    const envelope = doc.components.schemas.ErrorEnvelope;
    expect(envelope?.required).toEqual(expect.arrayContaining(['success', 'message', 'error', 'timestamp']));
    const answers = await Promise.all([
      t.app.inject({ method: 'GET', url: '/contacts' }),
      t.app.inject({ method: 'POST', url: '/auth/signup', payload: { emial: 'x' } }),
      t.app.inject({ method: 'POST', url: '/auth/signup', headers: { 'content-type': 'application/json' }, payload: '{' }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([401, 422, 400]);
    for (const answer of answers) expect(ErrorEnvelopeSchema.safeParse(answer.json()).error).toBeUndefined();
  });
});

describe('schemas', () => {
  it('types condition fields with a recursive ConditionTree component', () => {
    const tree = doc.components.schemas.ConditionTree;
    expect(tree?.required).toEqual(['logic', 'groups']);
    expect(JSON.stringify(tree)).toContain(`"conditions":{"$ref":"${TREE}"}`);
    expect(doc.paths['/segments']?.post?.requestBody?.content['application/json']?.schema?.properties?.condition?.$ref).toBe(TREE);
    expect(doc.components.schemas.Segment?.properties?.condition?.anyOf?.[0]?.$ref).toBe(TREE);
    // No condition field is left untyped anywhere in the document.
    const untyped: string[] = [];
    JSON.stringify(doc, (key, value: unknown) => {
      // POST /workflows/:id/transitions' `condition: {branch}` is Plunk's branch alias, not a tree.
      const branchAlias = key === 'condition' && JSON.stringify(value).includes('"branch"');
      if ((key === 'condition' || key === 'audienceCondition') && typeof value === 'object' && value !== null && !branchAlias && !JSON.stringify(value).includes(TREE)) untyped.push(key);
      return value;
    });
    expect(untyped).toEqual([]);
    expect(JSON.stringify(doc)).toContain(`"audienceCondition":{"$ref":"${TREE}"`);
  });

  it('documents the CSV import as multipart/form-data with a file field', () => {
    const body = doc.paths['/contacts/import']?.post?.requestBody;
    expect(body?.required).toBe(true);
    const schema = body?.content['multipart/form-data']?.schema;
    expect(schema?.required).toEqual(['file']);
    expect(schema?.properties?.file).toMatchObject({ type: 'string', format: 'binary', contentMediaType: 'text/csv' });
    expect(schema?.properties?.file?.description).toMatch(/5 MB/);
  });

  it('gives every public-API operation a request and a 200 example that its own schemas accept', () => {
    const cases: [string, ZodType, ZodType][] = [
      ['/v1/send', SendBody, SendResponse],
      ['/v1/track', TrackBody, TrackResponse],
      ['/v1/verify', VerifyBody, VerifyResponse],
    ];
    for (const [path, body, response] of cases) {
      const op = doc.paths[path]?.post;
      const request = op?.requestBody?.content['application/json']?.example;
      const answer = op?.responses['200']?.content?.['application/json']?.example;
      expect(request, path).toBeDefined();
      expect(answer, path).toBeDefined();
      expect(body.safeParse(request).error, path).toBeUndefined();
      expect(response.safeParse(answer).error, path).toBeUndefined();
    }
  });
});

/** Runs the Redocly CLI (it has no Node API) and returns its JSON report; bounded in time. */
function redoclyLint(file: string): Promise<{ totals: { errors: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] }> {
  const cli = join(process.cwd(), 'node_modules/@redocly/cli/bin/cli.js');
  const args = [cli, 'lint', file, '--config', join(process.cwd(), 'redocly.yaml'), '--format=json', '--max-problems=10000'];
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' };
  return new Promise((resolve, reject) => {
    // A non-zero exit only means problems were found: the report is on stdout either way.
    execFile(process.execPath, args, { env, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      try {
        resolve(JSON.parse(stdout));
      } catch {
        reject(new Error(`redocly lint gave no report (${err?.message ?? ''}): ${stderr.slice(-2000)}`));
      }
    });
  });
}

/** Warnings of the recommended rules accepted, by rule and location, with why. */
const ACCEPTED_WARNINGS = [
  // servers[0] is this instance's PUBLIC_URL: http://localhost:8080 by default and in tests.
  { rule: 'no-server-example.com', pointer: '#/servers/0/url' },
  // Paths fixed by SPEC. The router prefers the static segment, so /events/contact/usage is the
  // contact route and /domains/project/verify the project route: no request is ambiguous.
  { rule: 'no-ambiguous-paths', pointer: '#/paths/~1events~1{eventName}~1usage' },
  { rule: 'no-ambiguous-paths', pointer: '#/paths/~1domains~1{id}~1verify' },
  // The OAuth browser steps answer a redirect (302), never a 2XX (docs/accounts.md).
  { rule: 'operation-2xx-response', pointer: '#/paths/~1auth~1oauth~1{provider}/get/responses' },
  { rule: 'operation-2xx-response', pointer: '#/paths/~1auth~1oauth~1{provider}~1link/get/responses' },
  { rule: 'operation-2xx-response', pointer: '#/paths/~1auth~1oauth~1{provider}~1callback/get/responses' },
];

describe('redocly lint (recommended rules)', () => {
  it('reports no errors and no warnings beyond the accepted ones', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      await writeFile(file, JSON.stringify(doc));
      const report = await redoclyLint(file);
      const problems = report.problems.map((p) => ({ rule: p.ruleId, severity: p.severity, pointer: p.location[0]?.pointer, message: p.message }));
      expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
      const unexpected = problems.filter((p) => !ACCEPTED_WARNINGS.some((a) => a.rule === p.rule && a.pointer === p.pointer));
      expect(unexpected).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { EDGE_TEXT, type Components, nearValid, RawJson, type Schema, toJson, valid } from './arbitraries.js';
import type { Operation, Parameter } from './operations.js';
import type { FuzzWorld } from './seed.js';

/** One generated request, with what makes it near-valid (`note`; empty when valid). */
export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  note: string;
}

/**
 * Percent-encoding that never throws: a lone surrogate (which encodeURIComponent refuses) is
 * written as the 3 bytes a careless encoder would produce (CESU-8), which is what a client can send.
 */
export function encodeRaw(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (code >= 0xd800 && code <= 0xdfff) out += `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`.toUpperCase();
    else out += encodeURIComponent(ch);
  }
  return out;
}

const asText = (v: unknown): string => (typeof v === 'string' ? v : v instanceof RawJson ? v.text : typeof v === 'object' && v !== null ? toJson(v) : String(v));

// ---------------------------------------------------------------------------------------------
// Credentials: the right one for the operation (an alternative of its `security`).

function credentials(op: Operation, world: FuzzWorld): fc.Arbitrary<{ headers: Record<string, string>; sessionProject: boolean }> {
  if (op.path === '/auth/logout') return fc.constant({ headers: { cookie: world.logoutCookie }, sessionProject: false });
  if (op.security.length === 0) return fc.constant({ headers: {}, sessionProject: false });
  return fc.constantFrom(...op.security).map((schemes) => {
    const headers: Record<string, string> = {};
    for (const scheme of schemes) {
      if (scheme === 'publicKey') headers.authorization = `Bearer ${world.project.public}`;
      if (scheme === 'secretKey') headers.authorization = `Bearer ${world.project.secret}`;
      if (scheme === 'session') headers.cookie = world.user.cookie;
      if (scheme === 'projectId') headers['x-project-id'] = world.project.id;
    }
    return { headers, sessionProject: schemes.includes('projectId') };
  });
}

// ---------------------------------------------------------------------------------------------
// Path parameters: a real id of the kind (named by the segment before it) or any valid value.

/** Operations that must not act on a real resource: they would call out of the machine. */
const NO_REAL_IDS = new Set(['POST /webhook-endpoints/{id}/test']);

function realValues(op: Operation, param: Parameter, world: FuzzWorld): string[] {
  if (NO_REAL_IDS.has(op.id)) return [];
  const segments = op.path.split('/');
  const before = segments[segments.indexOf(`{${param.name}}`) - 1] ?? '';
  const projectRoute = /^\/(users\/@me\/)?projects\/\{id\}/.test(op.path);
  if (projectRoute && param.name === 'id') return op.method === 'GET' ? [world.project.id, world.victim.id] : [world.victim.id];
  return world.ids[before] ?? [];
}

function pathValue(op: Operation, param: Parameter, world: FuzzWorld, components: Components): fc.Arbitrary<string> {
  // A path segment is never empty, `.` or `..` (those name another route: path mutations).
  const generated = valid({ ...param.schema, minLength: Math.max(1, Number(param.schema.minLength ?? 1)) }, components, param.name)
    .map((v) => encodeRaw(asText(v)))
    .filter((v) => v !== '.' && v !== '..');
  const real = realValues(op, param, world);
  return real.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...real.map(encodeRaw)) }, { weight: 1, arbitrary: generated }) : generated;
}

const BAD_PATH_VALUES = [
  'not-a-uuid', '0', '-1', '%00', 'a%00b', '%ED%A0%80', '%E0%A4%A', '%', '%zz', '..', '%2E%2E%2F%2E%2E', '%2F', 'x'.repeat(101), 'x'.repeat(3000),
  '%F0%9F%98%80', '%20', '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', '1e400', 'null', '__proto__', 'constructor', '',
  encodeRaw(EDGE_TEXT[2] ?? ''), encodeRaw("' OR 1=1 --"),
];

function buildPath(op: Operation, values: Record<string, string>): string {
  return op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => values[name] ?? '');
}

// ---------------------------------------------------------------------------------------------
// Query strings.

const queryParams = (op: Operation) => op.params.filter((p) => p.in === 'query');

function queryPairs(op: Operation, components: Components): fc.Arbitrary<[string, string][]> {
  const params = queryParams(op);
  if (params.length === 0) return fc.constant([]);
  return fc
    .tuple(...params.map((p) => (p.required ? valid(p.schema, components, p.name) : fc.option(valid(p.schema, components, p.name), { nil: undefined, freq: 2 }))))
    .map((values) =>
      values.flatMap((v, i) => {
        if (v === undefined) return [];
        const name = params[i]?.name ?? '';
        return Array.isArray(v) ? v.map((item): [string, string] => [name, encodeRaw(asText(item))]) : [[name, encodeRaw(asText(v))] as [string, string]];
      }),
    );
}

const queryString = (pairs: readonly [string, string][]) => (pairs.length ? `?${pairs.map(([k, v]) => (v === '\u0000bare' ? k : `${k}=${v}`)).join('&')}` : '');

const BAD_QUERY_VALUES = ['abc', '1.5', '-1', '0', 'true', '[]', '{}', '1e400', '99999999999999999999999', 'NaN', '%00', '%ED%A0%80', '%E0%A4%A', '%', '%zz', 'x'.repeat(10_000), '', '%F0%9F%98%80', encodeRaw('\u202e'), encodeRaw("'; DROP TABLE contacts; --")];

function queryMutation(op: Operation, pairs: [string, string][]): fc.Arbitrary<{ pairs: [string, string][]; note: string }> {
  const names = queryParams(op).map((p) => p.name);
  const options: fc.Arbitrary<{ pairs: [string, string][]; note: string }>[] = [
    fc.constantFrom('zzUnknown', 'limit', '__proto__', 'a[b]', '').chain((name) => fc.constantFrom(...BAD_QUERY_VALUES).map((v) => ({ pairs: [...pairs, [name, v] as [string, string]], note: `extra query ${name}=${v.slice(0, 40)}` }))),
  ];
  if (names.length) {
    options.push(
      fc.tuple(fc.constantFrom(...names), fc.constantFrom(...BAD_QUERY_VALUES)).map(([name, v]) => ({
        pairs: [...pairs.filter(([k]) => k !== name), [name, v] as [string, string]],
        note: `query ${name}=${v.slice(0, 40)}`,
      })),
      fc.constantFrom(...names).map((name) => ({ pairs: [...pairs, [name, '1'], [name, 'two']] as [string, string][], note: `query ${name} repeated` })),
      fc.constantFrom(...names).map((name) => ({ pairs: [...pairs.filter(([k]) => k !== name), [name, '\u0000bare'] as [string, string]], note: `query ${name} without a value` })),
    );
    const required = queryParams(op).filter((p) => p.required).map((p) => p.name);
    if (required.length) options.push(fc.constantFrom(...required).map((name) => ({ pairs: pairs.filter(([k]) => k !== name), note: `required query ${name} left out` })));
  }
  return fc.oneof(...options);
}

// ---------------------------------------------------------------------------------------------
// Bodies.

const MALFORMED_JSON = [
  '{', '{"a":}', "{'a':1}", '[1,2', 'NaN', '{"a":1,}', '{"a":1}garbage', '', 'nul', '{"a":"\\x"}', '{"a":"\\ud800"}', '\ufeff{}',
  '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '['.repeat(100_000), `"${'x'.repeat(1024 * 1024 + 10)}"`,
];
const NOT_OBJECTS = ['null', 'true', '123', '"text"', '[]', '[{}]', '1e400'];
const CONTENT_TYPES = [
  'text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/json-patch+json',
  'multipart/form-data', 'multipart/form-data; boundary=x', 'application/json, text/plain', 'application/octet-stream', 'application/jsonx', ';', 'application/json; charset=nope',
];

function bodyMutation(op: Operation, components: Components, json: string): fc.Arbitrary<{ payload?: string; contentType?: string; note: string }> {
  const schema = op.body as Schema;
  const options: fc.Arbitrary<{ payload?: string; contentType?: string; note: string }>[] = [
    nearValid(schema, components).map((m) => ({ payload: m.value === undefined ? undefined : toJson(m.value), note: `body: ${m.note}` })),
    fc.constantFrom(...MALFORMED_JSON).map((payload) => ({ payload, note: `malformed JSON ${JSON.stringify(payload.slice(0, 30))} (${payload.length} chars)` })),
    fc.constantFrom(...NOT_OBJECTS).map((payload) => ({ payload, note: `body ${payload}` })),
    fc.constantFrom(...CONTENT_TYPES).map((contentType) => ({ payload: json, contentType, note: `Content-Type ${contentType}` })),
    fc.constant({ payload: json, contentType: '', note: 'no Content-Type' }),
    fc.constant({ payload: undefined, note: 'no body' }),
  ];
  const firstKey = /^\{"([^"]+)":/.exec(json)?.[1];
  if (firstKey) options.push(fc.constant({ payload: `{"${firstKey}":12345,${json.slice(1)}`, note: `duplicate key ${firstKey}` }));
  return fc.oneof({ weight: 5, arbitrary: options[0] as (typeof options)[number] }, ...options.slice(1).map((arbitrary) => ({ weight: 1, arbitrary })));
}

/** A multipart body with one part named `field` holding `bytes`. */
export function multipartBody(field: string, bytes: Buffer, filename = 'file.bin', contentType = 'application/octet-stream'): { payload: Buffer; contentType: string } {
  const boundary = `----fuzz${randomUUID()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${contentType}\r\n\r\n`;
  return { payload: Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

/** Multipart uploads: a file part as documented (CSV rows, image bytes), or near-valid ones. */
function multipartArbitrary(op: Operation): fc.Arbitrary<{ payload: Buffer | string; contentType: string; note: string }> {
  const props = Object.keys((op.multipart?.properties as Record<string, unknown> | undefined) ?? {});
  const field = fc.constantFrom(...(props.length ? props : ['file']));
  const csv = fc
    .array(fc.tuple(fc.oneof(fc.emailAddress(), fc.string({ maxLength: 20 })), fc.constantFrom('true', 'false', 'yes', ''), fc.string({ maxLength: 20 })), { maxLength: 5 })
    .map((rows) => Buffer.from(['email,subscribed,plan', ...rows.map((r) => r.map((c) => `"${c.replace(/"/g, '""')}"`).join(','))].join('\n')));
  const bytes = fc.oneof(csv, fc.constant(PNG_1X1), fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)), fc.constant(Buffer.alloc(0)), fc.constant(Buffer.concat([PNG_1X1.subarray(0, 30)])));
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(field, bytes).map(([f, b]) => ({ ...multipartBody(f, b), note: b.length ? '' : 'empty file' })) },
    { weight: 1, arbitrary: bytes.map((b) => ({ ...multipartBody('wrongField', b), note: 'file under another field name' })) },
    { weight: 1, arbitrary: fc.constant({ payload: '{"file":"x"}', contentType: 'application/json', note: 'JSON instead of multipart' }) },
    { weight: 1, arbitrary: fc.constant({ payload: '--x\r\nbroken', contentType: 'multipart/form-data; boundary=x', note: 'truncated multipart' }) },
    { weight: 1, arbitrary: fc.constant({ payload: 'abc', contentType: 'multipart/form-data', note: 'multipart without boundary' }) },
  );
}

// ---------------------------------------------------------------------------------------------
// Headers.

const IDEMPOTENCY_KEYS = ['', ' ', 'x'.repeat(256), 'cl\u00e9', '\t', 'key with spaces', 'k'];
const PROJECT_IDS = (world: FuzzWorld) => ['not-a-uuid', world.stranger.id, randomUUID(), '', world.project.id.toUpperCase(), `${world.project.id},${world.victim.id}`];

function headerMutation(op: Operation, world: FuzzWorld, sessionProject: boolean): fc.Arbitrary<{ headers: Record<string, string>; note: string }> {
  const options: fc.Arbitrary<{ headers: Record<string, string>; note: string }>[] = [
    fc.constantFrom(...IDEMPOTENCY_KEYS).map((v) => ({ headers: { 'idempotency-key': v }, note: `Idempotency-Key ${JSON.stringify(v.slice(0, 20))}` })),
    fc.constantFrom('text/html', 'application/xml', '*/*;q=0', 'application/json;q=0').map((v) => ({ headers: { accept: v }, note: `Accept ${v}` })),
    fc.constant({ headers: { 'content-encoding': 'gzip' }, note: 'Content-Encoding gzip (not compressed)' }),
  ];
  if (sessionProject) options.push(fc.constantFrom(...PROJECT_IDS(world)).map((v) => ({ headers: { 'x-project-id': v }, note: `X-Project-Id ${v}` })));
  if (op.method === 'GET' || op.method === 'DELETE') options.push(fc.constant({ headers: { 'content-type': 'application/json' }, note: 'Content-Type on a request without body' }));
  return fc.oneof(...options);
}

// ---------------------------------------------------------------------------------------------

type Part = 'valid' | 'body' | 'query' | 'path' | 'header';

/** A request before its URL and headers are put together. */
interface Draft {
  headers: Record<string, string>;
  path: Record<string, string>;
  query: [string, string][];
  payload?: string | Buffer;
  contentType?: string;
  note: string;
}

/**
 * Requests for one operation: about half valid (per its schemas, with the right credential),
 * the others near-valid (one mutation of one part: body, query, path parameter or header).
 */
export function requestArbitrary(op: Operation, world: FuzzWorld, components: Components): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const parts: { weight: number; arbitrary: fc.Arbitrary<Part> }[] = [{ weight: 8, arbitrary: fc.constant('valid') }, { weight: 2, arbitrary: fc.constant('query') }, { weight: 1, arbitrary: fc.constant('header') }];
  if (op.body || op.multipart) parts.push({ weight: 8, arbitrary: fc.constant('body') });
  if (pathParams.length) parts.push({ weight: 3, arbitrary: fc.constant('path') });
  const jsonBody = op.body ? valid(op.body, components) : fc.constant(undefined);
  const pathValues = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, pathValue(op, p, world, components)])));

  return fc
    .record({ part: fc.oneof(...parts), cred: credentials(op, world), path: pathValues, query: queryPairs(op, components), body: jsonBody })
    .chain(({ part, cred, path, query, body }) => {
      const base: Draft = { headers: { ...cred.headers }, path, query, payload: body === undefined ? undefined : toJson(body), contentType: op.body ? 'application/json' : undefined, note: '' };
      let next: fc.Arbitrary<Draft> = fc.constant(base);
      if (op.multipart && part !== 'body') next = multipartArbitrary(op).filter((m) => m.note === '').map((m) => ({ ...base, payload: m.payload, contentType: m.contentType }));
      if (part === 'body' && op.multipart) next = multipartArbitrary(op).map((m) => ({ ...base, payload: m.payload, contentType: m.contentType, note: m.note || 'multipart' }));
      else if (part === 'body' && op.body) {
        next = bodyMutation(op, components, typeof base.payload === 'string' ? base.payload : '{}').map((m) => ({
          ...base,
          payload: m.payload,
          contentType: m.contentType === undefined ? base.contentType : m.contentType || undefined,
          note: m.note,
        }));
      } else if (part === 'query') next = queryMutation(op, query).map((m) => ({ ...base, query: m.pairs, note: m.note }));
      else if (part === 'path' && pathParams.length) {
        next = fc.tuple(fc.constantFrom(...pathParams.map((p) => p.name)), fc.constantFrom(...BAD_PATH_VALUES)).map(([name, v]) => ({ ...base, path: { ...path, [name]: v }, note: `path ${name}=${v.slice(0, 40)}` }));
      } else if (part === 'header') next = headerMutation(op, world, cred.sessionProject).map((m) => ({ ...base, headers: { ...base.headers, ...m.headers }, note: m.note }));
      return next;
    })
    .map((r) => {
      const headers = { ...r.headers };
      if (r.contentType !== undefined && r.payload !== undefined) headers['content-type'] = r.contentType;
      if (r.contentType === undefined && r.payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
      return { method: op.method, url: buildPath(op, r.path) + queryString(r.query), headers, payload: r.payload, note: r.note };
    });
}

/** Requests with a wrong or missing credential for an operation that needs one. */
export function badCredentialArbitrary(op: Operation, world: FuzzWorld, components: Components): fc.Arbitrary<FuzzRequest> {
  const forged = `${world.user.cookie.split('.').slice(0, 2).join('.')}.${'A'.repeat(43)}`;
  const schemes = new Set(op.security.flat());
  const wrong: [string, Record<string, string>][] = [
    ['no credential', {}],
    ['garbage bearer', { authorization: 'Bearer not-a-key' }],
    ['Basic auth', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['bearer without a key', { authorization: 'Bearer ' }],
    ['unknown sk_', { authorization: `Bearer sk_${'0'.repeat(40)}` }],
    ['unknown pk_', { authorization: `Bearer pk_${'0'.repeat(40)}` }],
    ['forged session', { cookie: forged }],
    ['garbage session', { cookie: 'session=not-a-jwt' }],
    ['ended session', { cookie: world.logoutCookie }],
  ];
  if (schemes.has('publicKey') && !schemes.has('secretKey')) wrong.push(['secret key on a public-key route', { authorization: `Bearer ${world.project.secret}` }]);
  if (schemes.has('secretKey')) {
    wrong.push(['public key on a secret-key route', { authorization: `Bearer ${world.project.public}` }]);
    wrong.push(['session without X-Project-Id', { cookie: world.user.cookie }]);
    wrong.push(['session with a stranger\'s X-Project-Id', { cookie: world.user.cookie, 'x-project-id': world.stranger.id }]);
    wrong.push(['session with a malformed X-Project-Id', { cookie: world.user.cookie, 'x-project-id': 'not-a-uuid' }]);
  }
  return fc.tuple(fc.constantFrom(...wrong), requestArbitrary(op, world, components)).map(([[note, headers], req]) => {
    const rest = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['authorization', 'cookie', 'x-project-id'].includes(k)));
    return { ...req, headers: { ...rest, ...headers }, note: `${note}${req.note ? `; ${req.note}` : ''}` };
  });
}

import fc from 'fast-check';

/**
 * JSON Schema (as the served OpenAPI document holds it) → fast-check arbitraries: valid values,
 * and near-valid ones (a valid value with exactly one mutation, described by `note`).
 */

export type Schema = { [key: string]: unknown };
export type Components = Readonly<Record<string, Schema | undefined>>;

/** A value and what was done to make it (empty for a valid one). */
export interface Mutated {
  value: unknown;
  note: string;
}

/** Recursive schemas (the condition tree) stop growing below this depth. */
const MAX_DEPTH = 4;
/** Generated strings without a maxLength stay short; over-long ones are a mutation. */
const DEFAULT_MAX_LENGTH = 40;
const NESTING = 1000;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A number JSON.stringify cannot write (1e400 parses to Infinity): put into the text by `toJson`. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of a generated value, with its {@link RawJson} parts written as they are. */
export function toJson(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof RawJson) {
      raws.push(v.text);
      return `\u0001RAW${raws.length - 1}\u0001`;
    }
    return v;
  });
  return (text ?? 'null').replace(/"\\u0001RAW(\d+)\\u0001"/g, (_m, i: string) => raws[Number(i)] ?? 'null');
}

/** The schema behind `$ref`s (the document's refs are all `#/components/schemas/<id>`). */
export function deref(schema: Schema, components: Components): Schema {
  let s = schema;
  for (let i = 0; i < 16 && typeof s.$ref === 'string'; i++) {
    const { $ref, ...rest } = s;
    const target = components[($ref as string).replace('#/components/schemas/', '')];
    if (!target) throw new Error(`unresolved ${String($ref)}`);
    s = { ...target, ...rest };
  }
  return s;
}

function typesOf(s: Schema): string[] {
  if (Array.isArray(s.type)) return s.type as string[];
  if (typeof s.type === 'string') return [s.type];
  if (s.properties || s.additionalProperties) return ['object'];
  if (s.items) return ['array'];
  return [];
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** UTF-16 length at most `max`, cut on code points; NUL (a mutation of its own) replaced. */
function fitText(text: string, min: number, max: number): string {
  let out = text.replaceAll(String.fromCharCode(0), ' ');
  while (out.length > max) out = Array.from(out).slice(0, -1).join('');
  return out.length >= min ? out : out + 'a'.repeat(min - out.length);
}

/** Text of every kind: mostly printable ASCII, some any code point, some graphemes (emoji, accents). */
function text(min: number, max: number): fc.Arbitrary<string> {
  const maxLength = Math.min(max, min + DEFAULT_MAX_LENGTH);
  return fc
    .oneof(
      { weight: 5, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: min, maxLength }) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength }) },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: min, maxLength }) },
    )
    .map((s) => fitText(s, min, max));
}

const label = fc.stringMatching(/^[a-z][a-z0-9]{0,9}$/);
/** Addresses most email checks accept, and sometimes fast-check's RFC 5322 ones (some servers refuse). */
const email = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,15}[a-z0-9]$/), label, fc.constantFrom('com', 'org', 'example', 'io')).map(([l, d, t]) => `${l.replace(/\.\.+/g, '.')}@${d}.${t}`) },
  { weight: 1, arbitrary: fc.emailAddress() },
);
const dateTime = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());

/** Values a field of this name means, beside the arbitrary text its schema allows. */
const NAME_HINTS: Readonly<Record<string, fc.Arbitrary<string>>> = {
  startDate: dateTime,
  endDate: dateTime,
  scheduledFor: dateTime,
  tz: fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Mars/Olympus', '+05:30'),
  timezone: fc.constantFrom('UTC', 'Europe/Berlin', 'Not/AZone'),
  url: fc.constantFrom('https://example.com/hook', 'http://127.0.0.1/x', 'ftp://example.com', 'https://例え.jp/'),
  from: email,
  replyTo: email,
  to: email,
  email,
};

function stringValue(s: Schema, name: string | undefined): fc.Arbitrary<string> {
  const min = num(s.minLength) ?? 0;
  const max = num(s.maxLength) ?? Number.MAX_SAFE_INTEGER;
  const fits = (v: string) => v.length >= min && v.length <= max;
  if (typeof s.pattern === 'string') return fc.stringMatching(new RegExp(s.pattern)).filter(fits);
  switch (s.format) {
    case 'email':
      return email.filter(fits);
    case 'uuid':
      return fc.uuid({ version: 4 });
    case 'date-time':
      return dateTime;
    case 'uri':
    case 'url':
      return fc.webUrl().filter(fits);
  }
  const hint = name ? NAME_HINTS[name] : undefined;
  return hint ? fc.oneof({ weight: 3, arbitrary: hint.filter(fits) }, { weight: 1, arbitrary: text(min, max) }) : text(min, max);
}

function numberValue(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const exMin = num(s.exclusiveMinimum);
  const exMax = num(s.exclusiveMaximum);
  const step = integer ? 1 : 1e-9;
  let lo = num(s.minimum) ?? (exMin !== undefined ? exMin + step : -1_000_000);
  let hi = num(s.maximum) ?? (exMax !== undefined ? exMax - step : 1_000_000);
  if (integer) {
    lo = Math.max(Math.ceil(lo), Number.MIN_SAFE_INTEGER);
    hi = Math.min(Math.floor(hi), Number.MAX_SAFE_INTEGER);
    // Edges, small values near the lower bound (where most meaning is), anything in range.
    return fc.oneof(fc.constantFrom(lo, hi), fc.integer({ min: lo, max: Math.min(hi, lo + 200) }), fc.integer({ min: lo, max: hi }));
  }
  return fc.oneof(fc.constantFrom(lo, hi), fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true }));
}

/** An arbitrary of values `schema` accepts. `name`: the property or parameter name (hints). */
export function valid(schema: Schema, components: Components, name?: string, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema, components);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = s[key];
    if (Array.isArray(members)) return fc.oneof(...members.filter(isObject).map((m) => valid(m, components, name, depth + 1)));
  }
  if (Array.isArray(s.allOf)) return valid(Object.assign({}, ...(s.allOf as Schema[]).map((m) => deref(m, components))) as Schema, components, name, depth + 1);
  const types = typesOf(s);
  if (types.length === 0) return fc.jsonValue({ maxDepth: 2 });
  return fc.oneof(...types.map((type) => validOfType(s, type, components, name, depth)));
}

function validOfType(s: Schema, type: string, components: Components, name: string | undefined, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return stringValue(s, name);
    case 'integer':
      return numberValue(s, true);
    case 'number':
      return numberValue(s, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const min = num(s.minItems) ?? 0;
      const max = depth >= MAX_DEPTH ? min : Math.min(num(s.maxItems) ?? Infinity, min + 3);
      const items = isObject(s.items) ? valid(s.items, components, name, depth + 1) : fc.jsonValue({ maxDepth: 1 });
      return s.uniqueItems ? fc.uniqueArray(items, { minLength: min, maxLength: max, selector: (v) => JSON.stringify(v) }) : fc.array(items, { minLength: min, maxLength: max });
    }
    case 'object':
      return objectValue(s, components, depth);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function objectValue(s: Schema, components: Components, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = isObject(s.properties) ? (s.properties as Record<string, Schema>) : {};
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const deep = depth >= MAX_DEPTH;
  // Deep in a recursive schema only the required properties: the tree must end.
  const names = Object.keys(props).filter((k) => !deep || required.has(k));
  const record = fc.record(Object.fromEntries(names.map((k) => [k, valid(props[k] as Schema, components, k, depth + 1)])), {
    requiredKeys: names.filter((k) => required.has(k)),
  });
  const extra = s.additionalProperties;
  if (!isObject(extra) || Object.keys(props).length > 0 || deep) return record;
  const names$ = isObject(s.propertyNames) ? (s.propertyNames as Schema) : { type: 'string', maxLength: 30 };
  const key = stringValue({ ...names$, minLength: Math.max(1, num(names$.minLength) ?? 1) }, undefined);
  const value = Object.keys(extra).length === 0 ? fc.jsonValue({ maxDepth: 1 }) : valid(extra, components, undefined, depth + 1);
  return fc.dictionary(key, value, { maxKeys: 4 });
}

// ---------------------------------------------------------------------------------------------
// Near-valid: one mutation of a valid value.

/** A place in a generated value: the path to it and the schema it was generated from. */
interface Site {
  path: (string | number)[];
  schema: Schema;
  /** Set for an object property: whether its object requires it. */
  required?: boolean;
}

function sitesOf(value: unknown, schema: Schema, components: Components, path: (string | number)[] = [], out: Site[] = [], required?: boolean): Site[] {
  const s = deref(schema, components);
  out.push({ path, schema: s, required });
  if (out.length > 200) return out;
  const branch = [s, ...(['anyOf', 'oneOf'] as const).flatMap((k) => (Array.isArray(s[k]) ? (s[k] as Schema[]).map((m) => deref(m, components)) : []))];
  if (Array.isArray(value)) {
    const items = branch.find((b) => isObject(b.items))?.items as Schema | undefined;
    value.forEach((item, i) => sitesOf(item, items ?? {}, components, [...path, i], out));
  } else if (isObject(value)) {
    const obj = branch.find((b) => isObject(b.properties) || isObject(b.additionalProperties)) ?? {};
    const props = (obj.properties ?? {}) as Record<string, Schema>;
    const req = new Set(Array.isArray(obj.required) ? (obj.required as string[]) : []);
    for (const [k, v] of Object.entries(value)) {
      sitesOf(v, props[k] ?? (isObject(obj.additionalProperties) ? obj.additionalProperties : {}), components, [...path, k], out, req.has(k));
    }
  }
  return out;
}

/** A copy of `root` with `change` applied to the parent of `path`'s last key. */
function setAt(root: unknown, path: (string | number)[], change: (parent: Record<string | number, unknown>, key: string | number) => void): unknown {
  const copy = structuredClone(root);
  if (path.length === 0) return copy;
  let node = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  change(node, path[path.length - 1] as string | number);
  return copy;
}

const replaceAt = (root: unknown, path: (string | number)[], value: unknown): unknown =>
  path.length === 0 ? value : setAt(root, path, (parent, key) => { parent[key] = value; });

const where = (path: (string | number)[]) => (path.length === 0 ? '(root)' : path.join('.'));

/** Text that tests how text is handled: control characters, lone surrogates, direction marks, emoji, combining marks. */
export const EDGE_TEXT = [
  'a\u0000b',
  '\u0000',
  'x\ud800y',
  '\udfff',
  '\u0000\ud83d',
  '\u202eevil\u202c',
  '\u200d\u200b\ufeff',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  'e\u0301\u0301\u0301',
  '\u0085\u2028\u2029',
  '\r\n\t\u0007\u001b[31m',
  "'; DROP TABLE contacts; --",
  '${jndi:ldap://x}{{7*7}}<script>',
  '%00%ff%',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '\u{10ffff}\u{e0001}',
];

/** Numbers at the edges of what JSON, JavaScript and PostgreSQL hold. */
const HUGE_NUMBERS: readonly unknown[] = [
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 31,
  -(2 ** 63),
  new RawJson('1e400'),
  new RawJson('-1e400'),
  new RawJson('123456789012345678901234567890'),
  new RawJson('1e-400'),
  new RawJson('-0'),
  0.1 + 0.2,
];

const WRONG_TYPES: readonly unknown[] = ['text', 12345, -1, true, false, null, [], {}, [1, 'two'], { nested: { a: 1 } }, 0.5];

function typeOfValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** Values outside what the site's schema allows, by its own keywords. */
function outOfRange(s: Schema, current: unknown): unknown[] {
  const out: unknown[] = [];
  const types = typesOf(s);
  const max = num(s.maximum);
  const min = num(s.minimum);
  if (types.includes('integer') || types.includes('number')) {
    if (max !== undefined) out.push(max + 1, max * 10 + 7);
    if (min !== undefined) out.push(min - 1);
    if (num(s.exclusiveMinimum) !== undefined) out.push(s.exclusiveMinimum);
    if (types.includes('integer') && !types.includes('number')) out.push(1.5, -0.0001);
  }
  if (types.includes('string')) {
    const maxLength = num(s.maxLength);
    if (maxLength !== undefined) out.push('x'.repeat(maxLength + 1), '😀'.repeat(Math.ceil((maxLength + 1) / 2)));
    out.push('x'.repeat(70_000));
    const minLength = num(s.minLength);
    if (minLength !== undefined && minLength > 0) out.push('x'.repeat(minLength - 1));
    if (s.format === 'email') out.push('not-an-email', 'a@b', 'a@@b.com', 'a b@c.com', '@example.com', 'user@', `${'a'.repeat(300)}@example.com`);
    if (s.format === 'uuid' || typeof s.pattern === 'string') out.push('not-a-uuid', '00000000-0000-0000-0000-00000000000g', '{6ba7b810-9dad-11d1-80b4-00c04fd430c8}', '', ' ');
    if (s.format === 'date-time') out.push('2024-13-45T25:61:00Z', 'yesterday', '0000-00-00T00:00:00Z', '+275760-09-13T00:00:00.001Z');
  }
  if (Array.isArray(s.enum)) out.push('NOT_IN_ENUM', ...(s.enum as unknown[]).filter((e): e is string => typeof e === 'string').map((e) => e.toLowerCase() === e ? e.toUpperCase() : e.toLowerCase()));
  if (types.includes('array')) {
    const maxItems = num(s.maxItems);
    const item = Array.isArray(current) && current.length > 0 ? current[0] : 'x';
    if (maxItems !== undefined) out.push(Array.from({ length: maxItems + 1 }, () => structuredClone(item)));
    if ((num(s.minItems) ?? 0) > 0) out.push([]);
    out.push(Array.from({ length: 5000 }, () => item));
  }
  if (types.includes('object')) out.push(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`key${i}`, i])));
  // Depth: a structure a recursive walk may not expect.
  out.push(deeplyNested(NESTING));
  return out;
}

function deeplyNested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

type Mutation = (value: unknown, site: Site) => fc.Arbitrary<Mutated> | undefined;

/** The mutations, in the order of {@link MUTATION_WEIGHTS}. */
const MUTATIONS: readonly Mutation[] = [
  // A property removed (a required one whenever the site is one).
  (value, site) =>
    site.path.length === 0 ? undefined : fc.constant({ value: setAt(value, site.path, (p, k) => { delete p[k]; }), note: `removed ${site.required ? 'required ' : ''}${where(site.path)}` }),
  // A wrong type.
  (value, site) => {
    const actual = typeOfValue(site.path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], value));
    const choices = WRONG_TYPES.filter((v) => typeOfValue(v) !== actual);
    return fc.constantFrom(...choices).map((v) => ({ value: replaceAt(value, site.path, v), note: `${where(site.path)} of a wrong type: ${JSON.stringify(v)}` }));
  },
  // Out of range: bounds, lengths, formats, enums, item counts.
  (value, site) => {
    const current = site.path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], value);
    const choices = outOfRange(site.schema, current);
    return fc.constantFrom(...choices).map((v) => ({ value: replaceAt(value, site.path, v), note: `${where(site.path)} out of range: ${toJson(v).slice(0, 60)}` }));
  },
  // An unknown field, or a near miss of a known one.
  (value, site) => {
    const node = site.path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], value);
    if (!isObject(node)) return undefined;
    const known = Object.keys(node);
    const names = ['zzUnknown', '__proto__', 'constructor', 'a\u0000b', 'x\ud800', ...known.map((k) => k.toUpperCase()), ...known.map((k) => `${k}s`)];
    return fc.tuple(fc.constantFrom(...names), fc.jsonValue({ maxDepth: 1 })).map(([k, v]) => ({
      value: setAt(value, [...site.path, '\u0000placeholder'], (p) => { Object.defineProperty(p, k, { value: v, enumerable: true, configurable: true, writable: true }); }),
      note: `unknown field ${where([...site.path, k])}`,
    }));
  },
  // Edge text in a string (appended, or in its place), else in place of the value.
  (value, site) =>
    fc.tuple(fc.constantFrom(...EDGE_TEXT), fc.boolean()).map(([edge, append]) => {
      const current = site.path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], value);
      const v = append && typeof current === 'string' ? current + edge : edge;
      return { value: replaceAt(value, site.path, v), note: `${where(site.path)} with edge text ${JSON.stringify(v).slice(0, 60)}` };
    }),
  // A huge (or unrepresentable) number.
  (value, site) => fc.constantFrom(...HUGE_NUMBERS).map((v) => ({ value: replaceAt(value, site.path, v), note: `${where(site.path)} = ${toJson(v)}` })),
];

const EDGE_MUTATION = MUTATIONS[4];
/** removed, wrong type, out of range, unknown field, edge text, huge number. */
const MUTATION_WEIGHTS = [2, 2, 2, 1, 3, 1];

/** An arbitrary of near-valid values: a valid one with one mutation at one place. */
export function nearValid(schema: Schema, components: Components, name?: string): fc.Arbitrary<Mutated> {
  const mutation = fc.oneof(...MUTATIONS.map((m, i) => ({ weight: MUTATION_WEIGHTS[i] ?? 1, arbitrary: fc.constant(m) })));
  return valid(schema, components, name).chain((value) => {
    const sites = sitesOf(value, schema, components);
    // Edge text goes to a string when there is one: that is where storage breaks (NUL, surrogates).
    const strings = sites.filter((site) => typeof site.path.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], value) === 'string');
    return mutation.chain((mutate) => {
      const where$ = mutate === EDGE_MUTATION && strings.length ? strings : sites;
      return fc.constantFrom(...where$).chain((site) => mutate(value, site) ?? fc.constant({ value: undefined, note: 'value left out' }));
    });
  });
}

import { CONDITION_TREE, componentRef, extraComponents, type JsonObject } from './openapi-components.js';
import { ERROR_DESCRIPTIONS, EXAMPLES_KEY, type MediaExamples } from './openapi-operations.js';

/** Operation keys of a path item (OpenAPI 3.1). */
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Properties holding a condition tree; validated as `unknown` by the routes (see extraComponents). */
export const CONDITION_FIELDS: ReadonlySet<string> = new Set(['condition', 'audienceCondition']);

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

const pascal = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/**
 * A stable operationId from method and path: `POST /v1/send` → `postV1Send`,
 * `GET /contacts/{id}` → `getContactsById`, `/users/@me` → `…UsersMe`.
 */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      const param = /^\{(.+)\}$/.exec(segment);
      const text = param?.[1] ?? segment;
      const camel = text.split(/[^A-Za-z0-9]+/).filter(Boolean).map(pascal).join('');
      return param ? `By${camel}` : camel;
    });
  return method.toLowerCase() + (words.join('') || 'Root');
}

/**
 * Each operation its own object (@fastify/swagger shares one between the methods of a
 * multi-method route, e.g. GET and POST /auth/logout) and its operationId: the one a route
 * declares, else the derived one. Two operations with one id throw: a test builds the document.
 */
function assignOperationIds(paths: Record<string, JsonObject>): void {
  const seen = new Map<string, string>();
  for (const [path, item] of Object.entries(paths)) {
    const methodsOf = new Map<unknown, number>();
    for (const method of METHODS) if (isObject(item[method])) methodsOf.set(item[method], (methodsOf.get(item[method]) ?? 0) + 1);
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const shared = (methodsOf.get(op) ?? 0) > 1;
      const { operationId: declared, ...rest } = structuredClone(op);
      const id = typeof declared === 'string' && !shared ? declared : operationIdOf(method, path);
      const clash = seen.get(id);
      if (clash) throw new Error(`OpenAPI: operationId ${id} of ${method.toUpperCase()} ${path} is also that of ${clash}`);
      seen.set(id, `${method.toUpperCase()} ${path}`);
      item[method] = { operationId: id, ...rest };
    }
  }
}

/** An open object (`{}` or a record of anything): what `z.unknown()` / `z.record(…, z.unknown())` become. */
function isUntyped(schema: JsonObject): boolean {
  const keys = Object.keys(schema).filter((k) => k !== 'description');
  if (keys.length === 0) return true;
  return schema.type === 'object' && schema.properties === undefined && (schema.additionalProperties === undefined || (isObject(schema.additionalProperties) && Object.keys(schema.additionalProperties).length === 0));
}

/** The condition field's schema with its open part replaced by the tree (nullability kept). */
function typedCondition(schema: JsonObject): JsonObject | undefined {
  if (isUntyped(schema)) return { $ref: componentRef(CONDITION_TREE), ...(typeof schema.description === 'string' && { description: schema.description }) };
  if (!Array.isArray(schema.anyOf)) return undefined;
  let changed = false;
  const anyOf = schema.anyOf.map((member: unknown) => {
    if (isObject(member) && member.type !== 'null' && isUntyped(member)) {
      changed = true;
      return { $ref: componentRef(CONDITION_TREE) };
    }
    return member;
  });
  return changed ? { ...schema, anyOf } : undefined;
}

/** Every `condition` / `audienceCondition` property anywhere in the document refers to the tree. */
function typeConditionFields(node: unknown, depth = 0): void {
  // The document is a few levels of paths and schemas; the bound only guards a cycle.
  if (depth > 64) return;
  if (Array.isArray(node)) {
    for (const child of node) typeConditionFields(child, depth + 1);
    return;
  }
  if (!isObject(node)) return;
  if (isObject(node.properties)) {
    for (const [name, schema] of Object.entries(node.properties)) {
      if (!CONDITION_FIELDS.has(name) || !isObject(schema)) continue;
      const typed = typedCondition(schema);
      if (typed) node.properties[name] = typed;
    }
  }
  for (const child of Object.values(node)) typeConditionFields(child, depth + 1);
}

function refsIn(node: unknown, out: Set<string>, depth = 0): void {
  if (depth > 64) return;
  if (Array.isArray(node)) for (const child of node) refsIn(child, out, depth + 1);
  else if (isObject(node)) {
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#/components/schemas/')) out.add(node.$ref.slice('#/components/schemas/'.length));
    for (const child of Object.values(node)) refsIn(child, out, depth + 1);
  }
}

/**
 * Drops the schemas nothing refers to: fastify-type-provider-zod emits an input and an output
 * variant of every registered schema, and most routes use only one of them. The rest are listed
 * by name: zod's registry holds them in the order their modules were first loaded in this
 * process, which the document (and the dashboard's generated types) must not depend on.
 */
function pruneSchemas(doc: JsonObject): void {
  const components = doc.components as { schemas: Record<string, unknown> };
  const { schemas } = components;
  const used = new Set<string>();
  refsIn(doc.paths, used);
  for (let queue = [...used]; queue.length > 0; ) {
    const found = new Set<string>();
    refsIn(queue.map((id) => schemas[id]), found);
    queue = [...found].filter((id) => !used.has(id));
    for (const id of queue) used.add(id);
  }
  const byName = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);
  components.schemas = Object.fromEntries(Object.entries(schemas).filter(([id]) => used.has(id)).sort(byName));
}

/**
 * The media-type `example` of bodies and answers from the examples their zod schemas declare
 * (the public API's): shown, and sent as it is, by "Try it out".
 */
function mediaExamples(paths: Record<string, JsonObject>): void {
  const setExample = (media: unknown, example: unknown) => {
    if (isObject(media) && example !== undefined) media.example = example;
  };
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op) || !isObject(op[EXAMPLES_KEY])) continue;
      const examples = op[EXAMPLES_KEY] as unknown as MediaExamples;
      delete op[EXAMPLES_KEY];
      const body = op.requestBody;
      if (isObject(body) && isObject(body.content)) setExample(body.content['application/json'], examples.body);
      const responses = isObject(op.responses) ? op.responses : {};
      for (const [status, example] of Object.entries(examples.responses)) {
        const response = responses[status];
        if (isObject(response) && isObject(response.content)) setExample(response.content['application/json'], example);
      }
    }
  }
}

/** @fastify/swagger's placeholder description, replaced by what the status means here. */
const PLACEHOLDER = 'Default Response';

function describeResponses(paths: Record<string, JsonObject>): void {
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const responses = isObject(item[method]) ? item[method].responses : undefined;
      if (!isObject(responses)) continue;
      for (const [status, response] of Object.entries(responses)) {
        if (!isObject(response) || response.description !== PLACEHOLDER) continue;
        response.description = status.startsWith('2') ? 'Success' : (ERROR_DESCRIPTIONS[status] ?? 'Error');
      }
    }
  }
}

/** The document as served, from the one @fastify/swagger built out of the routes. */
export function finishDocument(doc: JsonObject): JsonObject {
  const out = structuredClone(doc);
  const components = (out.components ?? {}) as JsonObject;
  out.components = { ...components, schemas: { ...((components.schemas as JsonObject | undefined) ?? {}), ...extraComponents() } };
  const paths = (out.paths ?? {}) as Record<string, JsonObject>;
  assignOperationIds(paths);
  describeResponses(paths);
  typeConditionFields(out);
  pruneSchemas(out);
  mediaExamples(paths);
  return out;
}

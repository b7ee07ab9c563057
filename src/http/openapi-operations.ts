import type { RouteOptions } from 'fastify';
import { z } from 'zod';
import { MAX_IMPORT_BYTES } from '../modules/contacts/index.js';
import { MAX_IMAGE_BYTES } from '../modules/uploads/index.js';
import { AuthMode } from './context.js';
import { componentRef, ERROR_ENVELOPE, type JsonObject, LEGACY_ERROR } from './openapi-components.js';

/**
 * Security scheme names of the document. Bearer schemes for the two key types (Swagger UI's
 * Authorize keeps one value per scheme, so a pk_ and an sk_ can both be entered), the
 * session cookie, and X-Project-Id as a header scheme paired with the cookie.
 */
export const Scheme = { publicKey: 'publicKey', secretKey: 'secretKey', session: 'session', projectId: 'projectId' } as const;

/**
 * The operation's `security` from the route's `config.auth`, the declaration auth.ts enforces
 * (same default: `secret`). Alternatives are OR-ed, the schemes of one entry AND-ed.
 */
export function securityFor(auth: AuthMode): Record<string, string[]>[] {
  switch (auth) {
    case AuthMode.none:
      return [];
    case AuthMode.user:
      return [{ [Scheme.session]: [] }];
    case AuthMode.public:
      return [{ [Scheme.publicKey]: [] }];
    case AuthMode.secret:
      return [{ [Scheme.secretKey]: [] }, { [Scheme.session]: [], [Scheme.projectId]: [] }];
  }
}

/** A route as the documentation rules read it: only its declarations. */
export interface RouteFacts {
  method: string;
  url: string;
  auth: AuthMode;
  rateLimited: boolean;
  idempotent: boolean;
  hasBody: boolean;
  hasInput: boolean;
  hasPathParams: boolean;
  /** `config.roles` declared: a member of another role gets 403. */
  hasRoles: boolean;
}

type Route = Pick<RouteOptions, 'method' | 'url' | 'config' | 'schema'>;

export function routeFacts(route: Route, schema: JsonObject): RouteFacts {
  const config = route.config ?? {};
  const auth = config.auth ?? AuthMode.secret;
  // rate-limit.ts: counted per project once authenticated by key or session + X-Project-Id (or
  // the project of a `user` route's path, `config.roles`), or per address on `rateLimit: 'ip'`;
  // other `user` and `none` routes have no project to count.
  const projectScoped = auth === AuthMode.public || auth === AuthMode.secret || config.roles !== undefined;
  const rateLimited = config.rateLimit === 'ip' || (config.rateLimit !== false && projectScoped);
  const hasBody = schema.body !== undefined;
  return {
    method: Array.isArray(route.method) ? route.method.join(',') : String(route.method),
    url: route.url,
    auth,
    rateLimited,
    idempotent: config.idempotent === true,
    hasBody,
    hasInput: hasBody || schema.querystring !== undefined || schema.params !== undefined,
    hasPathParams: /[:*]/.test(route.url),
    hasRoles: config.roles !== undefined,
  };
}

/**
 * Failures a few routes have beyond the rules below (their handlers or services throw them).
 * Keyed `METHOD url` as registered (`:param`); a test checks each key names a documented operation.
 */
export const ROUTE_ERRORS: Readonly<Record<string, readonly number[]>> = {
  'POST /auth/login': [401],
  'POST /auth/signup': [403],
  // For clients that ask for JSON; browsers are redirected with ?error= (docs/accounts.md).
  'GET /auth/oauth/:provider/callback': [400, 401, 403, 409, 502],
  'POST /webhooks/notifications': [400, 403],
  // The last OWNER, an address already a member, the pending-invitation cap; the invite rates (docs/members.md).
  'POST /projects/:id/members': [409, 429],
  'PATCH /projects/:id/members/:userId': [409],
  'DELETE /projects/:id/members/:userId': [409],
  'PATCH /contacts/:id': [409],
  // segmentId of no segment of the project (docs/export.md).
  'GET /contacts/export': [404],
  'POST /domains': [409],
  'GET /domains/:id/verify': [409],
  'PATCH /segments/:id': [409],
  'DELETE /segments/:id': [409],
  'POST /segments/:id/members': [409],
  'DELETE /segments/:id/members': [409],
  'PUT /campaigns/:id': [409],
  'DELETE /campaigns/:id': [409],
  'POST /campaigns/:id/send': [409],
  'POST /campaigns/:id/cancel': [409],
  // The endpoints-per-project limit (docs/webhooks-outgoing.md).
  'POST /webhook-endpoints': [409],
  // Its own token, not an API credential (no security scheme): a missing or wrong METRICS_TOKEN;
  // no token set and a client not on this machine.
  'GET /metrics': [401, 403],
};

/**
 * Bodies a route reads itself as multipart/form-data (no zod body to validate: the handler
 * streams the file), documented as such. Keyed `METHOD url`.
 */
export const MULTIPART_BODIES: Readonly<Record<string, JsonObject>> = {
  'POST /contacts/import': {
    type: 'object',
    required: ['file'],
    properties: {
      file: {
        type: 'string',
        format: 'binary',
        contentMediaType: 'text/csv',
        description: `The CSV file, at most ${MAX_IMPORT_BYTES / 1024 / 1024} MB: a header row with an \`email\` column, optional \`subscribed\`, any other columns become contact data`,
      },
    },
  },
  'POST /uploads/image': {
    type: 'object',
    properties: {
      image: {
        type: 'string',
        format: 'binary',
        description: `The image, at most ${MAX_IMAGE_BYTES / 1024 / 1024} MB: JPEG, PNG, GIF or WebP (detected from the bytes)`,
      },
      file: { type: 'string', format: 'binary', description: 'Accepted instead of `image`' },
    },
  },
};

/** Routes that answer some 400s with the legacy flat `{error}` body (errors.ts LegacyBadRequest). */
export const LEGACY_400_ROUTES: ReadonlySet<string> = new Set(['POST /contacts', 'POST /segments', 'POST /templates']);

/** What each error status means on this API: the responses' descriptions. */
export const ERROR_DESCRIPTIONS: Readonly<Record<string, string>> = {
  400: 'Malformed request (invalid JSON, bad Content-Length)',
  401: 'Missing or invalid credentials (see the security of this operation)',
  403: 'Credentials valid but not allowed here: project disabled, not a member of the X-Project-Id project, or refused by the route',
  404: 'No such resource in this project',
  408: 'The request (headers, or body) did not arrive in time (BODY_TIMEOUT_SECONDS)',
  409: 'Conflict: the Idempotency-Key was already used, or the resource is in a state that forbids this',
  413: 'Request body too large',
  415: 'Unsupported Content-Type: send `Content-Type: application/json`',
  422: 'Validation failed; `error.errors[]` names each field',
  429: 'Rate limit exceeded; retry after the Retry-After header',
  500: 'Unexpected error (message masked; quote the requestId)',
  502: 'The upstream identity provider refused or did not answer (OAuth callback)',
  503: 'Unavailable: no database connection became free in time (retry after the Retry-After header), or the database is not answering',
};

/** The error statuses that apply to a route, from its declarations. */
export function errorStatuses(f: RouteFacts): number[] {
  const statuses = new Set<number>([408, 500, 503]);
  if (f.auth !== AuthMode.none) statuses.add(401);
  if (f.auth === AuthMode.public || f.auth === AuthMode.secret || f.hasRoles) statuses.add(403);
  if (f.hasBody) for (const s of [400, 413, 415]) statuses.add(s);
  if (f.hasInput) statuses.add(422);
  if (f.hasPathParams) statuses.add(404);
  if (f.rateLimited) statuses.add(429);
  if (f.idempotent) statuses.add(409);
  for (const method of f.method.split(',')) for (const s of ROUTE_ERRORS[`${method} ${f.url}`] ?? []) statuses.add(s);
  return [...statuses].sort((a, b) => a - b);
}

const envelopeResponse = (legacy: boolean): JsonObject =>
  legacy ? { anyOf: [{ $ref: componentRef(ERROR_ENVELOPE) }, { $ref: componentRef(LEGACY_ERROR) }] } : { $ref: componentRef(ERROR_ENVELOPE) };

/** Carries the examples of a route's zod schemas to openapi-document.ts (then removed). */
export const EXAMPLES_KEY = 'x-media-examples';

export interface MediaExamples {
  body?: unknown;
  responses: Record<string, unknown>;
}

/** The first `examples` entry of a zod schema's metadata (`.meta({id, examples})`). */
function exampleOf(schema: unknown): unknown {
  if (!(schema instanceof z.ZodType)) return undefined;
  const examples: unknown = z.globalRegistry.get(schema)?.examples;
  return Array.isArray(examples) ? examples[0] : undefined;
}

/**
 * Examples declared on the route's body and answer schemas. Read here from the zod metadata
 * because zod leaves `examples` out of the input JSON Schema of a schema that transforms
 * (they describe its output), which every request body with contact data does.
 */
function mediaExamples(zodSchema: RouteOptions['schema']): MediaExamples | undefined {
  const out: MediaExamples = { body: exampleOf(zodSchema?.body), responses: {} };
  for (const [status, schema] of Object.entries((zodSchema?.response ?? {}) as Record<string, unknown>)) {
    const example = exampleOf(schema);
    if (example !== undefined) out.responses[status] = example;
  }
  return out.body === undefined && Object.keys(out.responses).length === 0 ? undefined : out;
}

/**
 * The route's transformed schema (JSON Schema parts, as fastify-type-provider-zod made them)
 * with what the document derives from its declarations: security and error responses. A
 * response the route declares itself is kept.
 */
export function decorateOperation(route: Route, schema: JsonObject | undefined): JsonObject {
  const multipart = MULTIPART_BODIES[`${String(route.method)} ${route.url}`];
  const base: JsonObject = { ...schema, ...(multipart && { body: multipart, consumes: ['multipart/form-data'] }) };
  const facts = routeFacts(route, base);
  const declared = (base.response ?? {}) as Record<string, JsonObject>;
  const response: Record<string, JsonObject> = { ...declared };
  const methods = facts.method.split(',');
  for (const status of errorStatuses(facts)) {
    if (declared[status] !== undefined) continue;
    response[status] = envelopeResponse(status === 400 && methods.some((m) => LEGACY_400_ROUTES.has(`${m} ${facts.url}`)));
  }
  // Without a declared answer @fastify/swagger would invent a 200; keep one beside the errors.
  if (base.response === undefined) response[200] = { description: 'Success' };
  const examples = mediaExamples(route.schema);
  return { ...base, response, security: securityFor(facts.auth), ...(examples && { [EXAMPLES_KEY]: examples }) };
}

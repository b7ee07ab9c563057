import type { Kysely } from 'kysely';
import type { Database, WebhookDeliveryRow, WebhookEndpointRow } from '../../db/schema.js';
import { conflict, type FieldError, notFound, validationError } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { BlockedAddressError, type LookupAll, systemLookup } from '../../lib/ssrf.js';
import { isUuid, uuidV7 } from '../../lib/uuid.js';
import { insertTestDelivery, listDeliveryRows } from './deliveries.repo.js';
import { TEST_EVENT_TYPE } from './event-types.js';
import { type CallOutcome, postSigned, resolveEndpoint } from './http-call.js';
import { generateEndpointSecret, openSecret, payloadBody } from './payload.js';
import {
  abandonPendingDeliveries,
  countEndpoints,
  deleteEndpointRow,
  findEndpointRow,
  insertEndpoint,
  listEndpointRows,
  lockProjectEndpoints,
  updateEndpointRow,
} from './webhook-endpoints.repo.js';
import {
  type CreateWebhookEndpointBody,
  type ListDeliveriesQuery,
  MAX_ENDPOINTS_PER_PROJECT,
  type TestWebhookResult,
  type UpdateWebhookEndpointBody,
  type WebhookDelivery,
  type WebhookDeliveryList,
  type WebhookEndpoint,
  type WebhookEndpointList,
  type WebhookEndpointWithSecret,
} from './webhook-endpoints.schema.js';

/** What the endpoint routes need besides the request. */
export interface EndpointDeps {
  db: Kysely<Database>;
  /** endpointSecretBox(config.secret). */
  box: SecretBox;
  /** WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** Default: the system resolver. */
  lookup?: LookupAll;
}

/** A registration's DNS check waits at most this long; a host that does not resolve yet is accepted (checked at every call). */
const REGISTRATION_LOOKUP_MS = 3_000;

const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

function rowToEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: iso(row.disabled_at),
    failingSince: iso(row.failing_since),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function rowToDelivery(row: WebhookDeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    statusCode: row.status_code,
    responseExcerpt: row.response_excerpt,
    error: row.error,
    durationMs: row.duration_ms,
    lastAttemptAt: iso(row.last_attempt_at),
    nextAttemptAt: row.status === 'PENDING' ? iso(row.next_attempt_at) : null,
    finishedAt: iso(row.finished_at),
    createdAt: row.created_at.toISOString(),
    payload: { id: row.event_id, type: row.event_type, createdAt: row.event_at.toISOString(), data: row.data },
  };
}

const urlError = (message: string, code = 'invalid_string'): FieldError => ({ field: 'url', message, code });

/**
 * The URL as stored (normalised by the URL parser): http or https with a host, and unless
 * WEBHOOK_ALLOW_PRIVATE no address of its host in a private, loopback or link-local range (the
 * guard runs again at every call, on a fresh lookup). 422 otherwise.
 */
async function checkUrl(deps: EndpointDeps, raw: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError([urlError('Not a valid URL (expected https://host/path)')]);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw validationError([urlError(`Only http and https URLs are called, not ${url.protocol}`)]);
  if (!url.hostname) throw validationError([urlError('The URL has no host')]);
  if (!deps.allowPrivate) {
    try {
      await resolveEndpoint(url, { lookup: deps.lookup ?? systemLookup, allowPrivate: false, timeoutMs: REGISTRATION_LOOKUP_MS });
    } catch (err) {
      if (err instanceof BlockedAddressError) throw validationError([urlError(err.message, 'private_address')]);
      // Not resolvable now: accepted; each call resolves it again and records the failure.
    }
  }
  return url.href;
}

const notFoundEndpoint = () => notFound('Webhook endpoint');

async function requireEndpoint(db: Kysely<Database>, projectId: string, id: string): Promise<WebhookEndpointRow> {
  const row = isUuid(id) ? await findEndpointRow(db, projectId, id) : undefined;
  if (!row) throw notFoundEndpoint();
  return row;
}

/** POST /webhook-endpoints: 409 past MAX_ENDPOINTS_PER_PROJECT (checked under a per-project lock). */
export async function createEndpoint(deps: EndpointDeps, projectId: string, body: CreateWebhookEndpointBody): Promise<WebhookEndpointWithSecret> {
  const url = await checkUrl(deps, body.url);
  const secret = generateEndpointSecret();
  const row = await deps.db.transaction().execute(async (trx) => {
    await lockProjectEndpoints(trx, projectId);
    if ((await countEndpoints(trx, projectId)) >= MAX_ENDPOINTS_PER_PROJECT) {
      throw conflict(`A project has at most ${MAX_ENDPOINTS_PER_PROJECT} webhook endpoints: delete one first`, { limit: MAX_ENDPOINTS_PER_PROJECT });
    }
    return insertEndpoint(trx, { projectId, url, events: [...new Set(body.events)], enabled: body.enabled ?? true, sealedSecret: deps.box.seal(secret) });
  });
  return { ...rowToEndpoint(row), secret };
}

export async function listEndpoints(db: Kysely<Database>, projectId: string): Promise<WebhookEndpointList> {
  return { data: (await listEndpointRows(db, projectId)).map(rowToEndpoint) };
}

export async function getEndpoint(db: Kysely<Database>, projectId: string, id: string): Promise<WebhookEndpoint> {
  return rowToEndpoint(await requireEndpoint(db, projectId, id));
}

/**
 * PATCH: `enabled: true` on a disabled endpoint re-enables it and clears its failure state (so
 * does a new URL); `enabled: false` stops it and gives up its waiting deliveries.
 */
export async function updateEndpoint(deps: EndpointDeps, projectId: string, id: string, body: UpdateWebhookEndpointBody): Promise<WebhookEndpoint> {
  if (!isUuid(id)) throw notFoundEndpoint();
  const url = body.url === undefined ? undefined : await checkUrl(deps, body.url);
  return deps.db.transaction().execute(async (trx) => {
    const current = await findEndpointRow(trx, projectId, id, { forUpdate: true });
    if (!current) throw notFoundEndpoint();
    const enable = body.enabled === true && !current.enabled;
    const disable = body.enabled === false && current.enabled;
    const row = await updateEndpointRow(trx, projectId, id, {
      url,
      events: body.events && [...new Set(body.events)],
      enabled: enable ? true : disable ? false : undefined,
      resetHealth: enable || (url !== undefined && url !== current.url),
    });
    if (!row) throw notFoundEndpoint();
    if (disable) await abandonPendingDeliveries(trx, projectId, id, 'the endpoint was disabled');
    return rowToEndpoint(row);
  });
}

export async function deleteEndpoint(db: Kysely<Database>, projectId: string, id: string): Promise<void> {
  if (!isUuid(id) || !(await deleteEndpointRow(db, projectId, id))) throw notFoundEndpoint();
}

/** POST …/rotate-secret: a new secret signs every later call, retries included. */
export async function rotateEndpointSecret(deps: EndpointDeps, projectId: string, id: string): Promise<WebhookEndpointWithSecret> {
  if (!isUuid(id)) throw notFoundEndpoint();
  const secret = generateEndpointSecret();
  const row = await updateEndpointRow(deps.db, projectId, id, { sealedSecret: deps.box.seal(secret) });
  if (!row) throw notFoundEndpoint();
  return { ...rowToEndpoint(row), secret };
}

/**
 * POST …/test: one signed `webhook.test` call now (enabled or not), answered with its outcome and
 * recorded in the delivery log. It does not count toward the endpoint's failure state.
 */
export async function testEndpoint(deps: EndpointDeps, projectId: string, id: string): Promise<TestWebhookResult> {
  const row = await requireEndpoint(deps.db, projectId, id);
  const eventId = uuidV7();
  const eventAt = new Date();
  const data = { endpointId: row.id, message: 'A test event: this endpoint receives signed calls', occurredAt: eventAt.toISOString() };
  const at = new Date();
  const outcome = await callOnce(deps, row, payloadBody({ event_id: eventId, event_type: TEST_EVENT_TYPE, event_at: eventAt, data }), eventId);
  await insertTestDelivery(deps.db, { projectId, endpointId: row.id, eventId, eventType: TEST_EVENT_TYPE, eventAt, data, outcome: { ...outcome, at } });
  return { success: outcome.ok, statusCode: outcome.statusCode, responseExcerpt: outcome.excerpt, error: outcome.error, durationMs: outcome.durationMs, eventId };
}

async function callOnce(deps: EndpointDeps, row: WebhookEndpointRow, body: string, eventId: string): Promise<CallOutcome> {
  const failed = (error: string): CallOutcome => ({ ok: false, statusCode: null, excerpt: null, error, durationMs: 0, interrupted: false });
  const secret = openSecret(deps.box, row.secret);
  if (secret instanceof Error) return failed(secret.message);
  const url = new URL(row.url);
  try {
    const address = await resolveEndpoint(url, { lookup: deps.lookup ?? systemLookup, allowPrivate: deps.allowPrivate });
    return await postSigned({ url, address, body, secret, webhookId: eventId, eventType: TEST_EVENT_TYPE });
  } catch (err) {
    return failed(err instanceof Error ? err.message : String(err));
  }
}

/** GET …/deliveries: the log, newest first; the cursor is the last id of the page. */
export async function listDeliveries(db: Kysely<Database>, projectId: string, id: string, query: ListDeliveriesQuery): Promise<WebhookDeliveryList> {
  await requireEndpoint(db, projectId, id);
  if (query.cursor !== undefined && !isUuid(query.cursor)) {
    throw validationError([{ field: 'cursor', message: 'Malformed cursor: pass the cursor of the previous page as is', code: 'invalid_string' }]);
  }
  const rows = await listDeliveryRows(db, projectId, id, { before: query.cursor, status: query.status, limit: query.limit + 1 });
  const hasMore = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { data: page.map(rowToDelivery), cursor: hasMore ? (page.at(-1)?.id ?? null) : null, hasMore };
}

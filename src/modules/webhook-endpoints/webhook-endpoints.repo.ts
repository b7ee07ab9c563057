import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, WebhookEndpointRow } from '../../db/schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Serialises the endpoint-count check of one project's creates (the limit holds under concurrency). */
export async function lockProjectEndpoints(trx: Transaction<Database>, projectId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`webhook-endpoints:${projectId}`}, 0))`.execute(trx);
}

export async function countEndpoints(db: Db, projectId: string): Promise<number> {
  const row = await db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('project_id', '=', projectId).executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function insertEndpoint(
  db: Db,
  input: { projectId: string; url: string; events: readonly string[]; enabled: boolean; sealedSecret: string },
): Promise<WebhookEndpointRow> {
  return db
    .insertInto('webhook_endpoints')
    .values({ project_id: input.projectId, url: input.url, events: [...input.events], enabled: input.enabled, secret: input.sealedSecret })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listEndpointRows(db: Db, projectId: string): Promise<WebhookEndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('project_id', '=', projectId).orderBy('id').execute();
}

export async function findEndpointRow(db: Db, projectId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<WebhookEndpointRow | undefined> {
  const q = db.selectFrom('webhook_endpoints').selectAll().where('project_id', '=', projectId).where('id', '=', id);
  return (opts.forUpdate ? q.forUpdate() : q).executeTakeFirst();
}

export interface EndpointChanges {
  url?: string;
  events?: readonly string[];
  enabled?: boolean;
  /** Clears the failure state (re-enabled, or a new URL). */
  resetHealth?: boolean;
  sealedSecret?: string;
}

export async function updateEndpointRow(db: Db, projectId: string, id: string, changes: EndpointChanges): Promise<WebhookEndpointRow | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(changes.url !== undefined && { url: changes.url }),
      ...(changes.events !== undefined && { events: [...changes.events] }),
      ...(changes.enabled !== undefined && { enabled: changes.enabled }),
      ...(changes.enabled === false && { disabled_reason: null, disabled_at: sql<Date>`now()` }),
      ...(changes.resetHealth && { failing_since: null, disabled_reason: null, disabled_at: null }),
      ...(changes.sealedSecret !== undefined && { secret: changes.sealedSecret }),
      updated_at: sql`now()`,
    })
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteEndpointRow(db: Db, projectId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('webhook_endpoints').where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
  return r.numDeletedRows > 0n;
}

/** A disabled endpoint's waiting deliveries are given up: a disabled endpoint receives nothing. */
export async function abandonPendingDeliveries(db: Db, projectId: string, endpointId: string, reason: string): Promise<number> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'FAILED', next_attempt_at: null, finished_at: sql`now()`, error: sql`coalesce(error || '; ', '') || ${reason}` })
    .where('project_id', '=', projectId)
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'PENDING')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** The project's name and the addresses of its OWNERs and ADMINs (the auto-disable notice). */
export async function findProjectManagers(db: Db, projectId: string): Promise<{ name: string; emails: string[] } | undefined> {
  const project = await db.selectFrom('projects').select('name').where('id', '=', projectId).executeTakeFirst();
  if (!project) return undefined;
  const rows = await db
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('u.email')
    .where('m.project_id', '=', projectId)
    .where('m.role', 'in', ['OWNER', 'ADMIN'])
    .orderBy('u.email')
    .execute();
  return { name: project.name, emails: rows.map((r) => r.email) };
}

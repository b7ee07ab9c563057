import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { Tasks } from '../../jobs/queue.js';
import { queueInboundAttachmentDeletion } from '../bounces/index.js';
import { queueProjectFileDeletion } from '../uploads/index.js';

/**
 * SQL of a project's reset and deletion (docs/projects.md "Reset and delete"). The one place that
 * removes other modules' rows: like the `ON DELETE CASCADE` of their `project_id` keys, it acts on
 * the whole of one project at once, inside the caller's transaction, which holds the project row
 * FOR UPDATE (so no write of the project can interleave: every such write takes a KEY SHARE lock
 * on that row through its foreign key).
 */

/** The text as a uuid, or NULL when it is not one (a malformed payload must not abort the reset). */
const uuidOf = (text: ReturnType<typeof sql>) =>
  sql`CASE WHEN ${text} ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN (${text})::uuid END`;

/**
 * Removes the queued graphile-worker jobs that act on the project's data, found by how each task
 * names it: `projectId` in the payload, or the id of an email (send-email's job key), campaign,
 * segment or bulk job of the project. Must run before those rows are deleted. Jobs running right
 * now are left to finish (graphile-worker's `complete_jobs` skips locked jobs): they find their
 * rows gone, or wait on the project's lock and then fail their foreign keys. domains-recheck
 * stays (domains are kept).
 */
export async function deleteProjectJobs(trx: Transaction<Database>, projectId: string): Promise<number> {
  const byProject = [Tasks.workflowEvents, Tasks.workflowStep, Tasks.workflowCancelProject, Tasks.segmentsRecompute, Tasks.projectMailCancel, Tasks.webhookDeliver, Tasks.sendBatch];
  const byJobRow = [Tasks.contactsBulk, Tasks.contactsImport, Tasks.contactsFieldDelete];
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM graphile_worker.complete_jobs(ARRAY(
      SELECT j.id FROM graphile_worker._private_jobs j
      JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE (t.identifier = ANY(${byProject}::text[]) AND j.payload ->> 'projectId' = ${projectId})
         OR (t.identifier = ${Tasks.sendEmail}
             AND EXISTS (SELECT 1 FROM emails e WHERE e.id = ${uuidOf(sql`j.key`)} AND e.project_id = ${projectId}))
         OR (t.identifier IN (${Tasks.campaignSend}, ${Tasks.campaignDeliver}, ${Tasks.campaignComplete})
             AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = ${uuidOf(sql`j.payload ->> 'campaignId'`)} AND c.project_id = ${projectId}))
         OR (t.identifier = ${Tasks.segmentsRecompute}
             AND EXISTS (SELECT 1 FROM segments s WHERE s.id = ${uuidOf(sql`j.payload ->> 'segmentId'`)} AND s.project_id = ${projectId}))
         OR (t.identifier = ANY(${byJobRow}::text[])
             AND EXISTS (SELECT 1 FROM jobs b WHERE b.id = ${uuidOf(sql`j.payload ->> 'jobId'`)} AND b.project_id = ${projectId}))
    ))`.execute(trx);
  return rows[0]?.n ?? 0;
}

/**
 * What a reset deletes, children before parents: one set-based DELETE per table by `project_id`
 * (every tenant table has it, in an index leading on it). Kept: the project row, its keys,
 * memberships, invitations, domains, outgoing webhook endpoints, suppressions (a reset must not clear the addresses that
 * bounced or complained), the deliverability history and billing.
 */
const WIPED: readonly { table: string; where?: (p: string) => ReturnType<typeof sql> }[] = [
  // Analytics rollups (migration 0029): counts of the rows below, so they go with them.
  { table: 'analytics_campaign_counts' },
  { table: 'analytics_email_counts' },
  { table: 'analytics_event_counts' },
  { table: 'analytics_event_daily' },
  // The campaign insight (migration 0031): bucket and link counts, every (email, URL) clicked.
  { table: 'campaign_email_counts' },
  { table: 'campaign_link_counts' },
  { table: 'email_link_clicks' },
  // The outgoing webhooks' delivery log (migration 0028); the endpoints are settings, kept.
  { table: 'webhook_deliveries' },
  { table: 'workflow_event_queue' },
  { table: 'workflow_step_executions' },
  { table: 'workflow_enrolments' },
  { table: 'workflow_executions' },
  { table: 'workflow_transitions' },
  { table: 'workflow_steps' },
  { table: 'workflows' },
  { table: 'outbox' },
  { table: 'emails' },
  { table: 'attachment_sets' },
  { table: 'campaigns' },
  { table: 'segment_members', where: (p) => sql`segment_id IN (SELECT id FROM segments WHERE project_id = ${p})` },
  { table: 'segments' },
  { table: 'templates' },
  { table: 'import_chunks', where: (p) => sql`job_id IN (SELECT id FROM jobs WHERE project_id = ${p})` },
  { table: 'jobs' },
  { table: 'idempotency_keys' },
  { table: 'uploads' },
  // Received mail (migration 0033): the contacts' messages and their events go together.
  { table: 'inbound_attachments' },
  { table: 'inbound_messages' },
  { table: 'events' },
  { table: 'contacts' },
];

/**
 * Whether the wipe may skip PostgreSQL's per-row foreign-key triggers: it deletes every row that
 * references a deleted row itself, so those triggers would find nothing, yet they cost ~15 µs a
 * call each (1,000,000 contacts × 5 referencing tables ≈ 60–100 s on 2 cores: bench/project-reset.md).
 * Only when it is provably safe: the role may set `session_replication_role` (superuser, as on
 * the embedded database, or granted `SET ON PARAMETER session_replication_role`), every foreign
 * key into a wiped table comes from a wiped table, and no wiped table has a DELETE trigger of its
 * own. The catalog is read each time: a table added later that references contacts makes the
 * reset take the slow, trigger-checked path instead of leaving its rows behind.
 */
async function canSkipTriggers(trx: Transaction<Database>): Promise<boolean> {
  const wiped = WIPED.map((w) => w.table);
  // A superuser, or (PostgreSQL 15+) a role granted SET ON PARAMETER session_replication_role.
  const { rows: [version] } = await sql<{ n: number }>`SELECT current_setting('server_version_num')::int AS n`.execute(trx);
  const settingAllowed = (version?.n ?? 0) >= 150000
    ? sql`current_setting('is_superuser') = 'on' OR has_parameter_privilege('session_replication_role', 'SET')`
    : sql`current_setting('is_superuser') = 'on'`;
  const { rows } = await sql<{ allowed: boolean; outside: number; delete_triggers: number }>`
    SELECT ${settingAllowed} AS allowed,
      (SELECT count(*)::int FROM pg_constraint c
        WHERE c.contype = 'f' AND c.confrelid::regclass::text = ANY(${wiped}::text[]) AND NOT (c.conrelid::regclass::text = ANY(${wiped}::text[]))) AS outside,
      (SELECT count(*)::int FROM pg_trigger t
        WHERE NOT t.tgisinternal AND (t.tgtype & 8) <> 0 AND t.tgrelid::regclass::text = ANY(${wiped}::text[])) AS delete_triggers`.execute(trx);
  const r = rows[0];
  return r !== undefined && r.allowed && r.outside === 0 && r.delete_triggers === 0;
}

/** Deletes everything a reset wipes (see {@link WIPED}) and the project's queued jobs. */
export async function deleteProjectData(trx: Transaction<Database>, projectId: string): Promise<{ skippedTriggers: boolean }> {
  await deleteProjectJobs(trx, projectId);
  // The stored images go with the commit (the uploads module's deletion queue), before their rows.
  await queueProjectFileDeletion(trx, projectId);
  // So do the stored attachments of received mail (private objects of the same storage).
  await queueInboundAttachmentDeletion(trx, projectId);
  const skippedTriggers = await canSkipTriggers(trx);
  if (skippedTriggers) await sql`SET LOCAL session_replication_role = replica`.execute(trx);
  for (const { table, where } of WIPED) {
    await sql`DELETE FROM ${sql.table(table)} WHERE ${where ? where(projectId) : sql`project_id = ${projectId}`}`.execute(trx);
  }
  if (skippedTriggers) await sql`SET LOCAL session_replication_role = origin`.execute(trx);
  return { skippedTriggers };
}

import { sql } from 'kysely';
import type { Db } from '../../../src/db/connection.js';

/**
 * One of every kind of row a project holds (n contacts with 2 events each, a template, a static
 * segment with members, a campaign with emails, an outbox row, a workflow with steps, a
 * transition, executions, enrolments, a queued event, a bulk job, an idempotency key, a
 * suppression) and queued graphile-worker jobs naming the project's data each way tasks do.
 * Set-based SQL; returns the ids of the graphile-worker jobs.
 */
export async function seedProjectData(db: Db, projectId: string, n = 50): Promise<string[]> {
  const p = projectId;
  const run = (q: ReturnType<typeof sql>) => q.execute(db.db);
  await run(sql`INSERT INTO contacts (project_id, email, subscribed) SELECT ${p}, 'c' || i || '@seed.example', true FROM generate_series(1, ${n}) i`);
  await run(sql`INSERT INTO events (project_id, contact_id, name) SELECT ${p}, id, e FROM contacts, unnest(ARRAY['a', 'b']) e WHERE project_id = ${p}`);
  const { rows: [tpl] } = await sql<{ id: string }>`INSERT INTO templates (project_id, name, subject, body, from_email) VALUES (${p}, 't', 's', 'b', 'a@seed.example') RETURNING id`.execute(db.db);
  const { rows: [seg] } = await sql<{ id: string }>`INSERT INTO segments (project_id, name, type) VALUES (${p}, 's', 'STATIC') RETURNING id`.execute(db.db);
  await run(sql`INSERT INTO segment_members (segment_id, project_id, contact_id) SELECT ${seg?.id}, ${p}, id FROM contacts WHERE project_id = ${p}`);
  const { rows: [camp] } = await sql<{ id: string }>`
    INSERT INTO campaigns (project_id, name, subject, body, from_email, audience_type, segment_id, status)
    VALUES (${p}, 'c', 's', 'b', 'a@seed.example', 'SEGMENT', ${seg?.id}, 'SENDING') RETURNING id`.execute(db.db);
  await run(sql`INSERT INTO attachment_sets (project_id, items) VALUES (${p}, '[]')`);
  await run(sql`
    INSERT INTO emails (project_id, contact_id, campaign_id, template_id, source, type, status, to_email, from_email, subject, html, message_id)
    SELECT ${p}, id, ${camp?.id}, ${tpl?.id}, 'CAMPAIGN', 'MARKETING', 'PENDING', email, 'a@seed.example', 's', 'b', '<' || gen_random_uuid() || '@seed.example>'
    FROM contacts WHERE project_id = ${p}`);
  await run(sql`
    INSERT INTO outbox (project_id, email_id, message_id, envelope_from, envelope_to, raw)
    SELECT project_id, id, message_id, from_email, to_email, '\\x00' FROM emails WHERE project_id = ${p} LIMIT 1`);
  const { rows: [wf] } = await sql<{ id: string }>`
    INSERT INTO workflows (project_id, name, trigger_config) VALUES (${p}, 'w', '{"eventName": "a"}') RETURNING id`.execute(db.db);
  const { rows: steps } = await sql<{ id: string }>`
    INSERT INTO workflow_steps (project_id, workflow_id, type, template_id)
    VALUES (${p}, ${wf?.id}, 'TRIGGER', NULL), (${p}, ${wf?.id}, 'SEND_EMAIL', ${tpl?.id}) RETURNING id`.execute(db.db);
  await run(sql`
    INSERT INTO workflow_transitions (project_id, workflow_id, from_step_id, to_step_id) VALUES (${p}, ${wf?.id}, ${steps[0]?.id}, ${steps[1]?.id})`);
  await run(sql`
    INSERT INTO workflow_executions (project_id, workflow_id, contact_id, status, current_step_id)
    SELECT ${p}, ${wf?.id}, id, 'RUNNING', ${steps[1]?.id} FROM contacts WHERE project_id = ${p}`);
  await run(sql`INSERT INTO workflow_enrolments (project_id, workflow_id, contact_id) SELECT ${p}, ${wf?.id}, id FROM contacts WHERE project_id = ${p}`);
  await run(sql`
    INSERT INTO workflow_step_executions (project_id, workflow_id, execution_id, step_id, status)
    SELECT ${p}, ${wf?.id}, id, ${steps[1]?.id}, 'WAITING' FROM workflow_executions WHERE project_id = ${p}`);
  await run(sql`INSERT INTO workflow_event_queue (project_id, event_id) SELECT ${p}, id FROM events WHERE project_id = ${p} LIMIT 5`);
  const { rows: [job] } = await sql<{ id: string }>`INSERT INTO jobs (project_id, kind) VALUES (${p}, 'import') RETURNING id`.execute(db.db);
  await run(sql`INSERT INTO import_chunks (job_id, project_id, seq, data) VALUES (${job?.id}, ${p}, 0, '\\x00')`);
  await run(sql`INSERT INTO idempotency_keys (project_id, key, method, path, status_code) VALUES (${p}, 'k', 'POST', '/v1/send', 200)`);
  await run(sql`INSERT INTO suppressions (project_id, email, reason) VALUES (${p}, 'bounced@seed.example', 'HARD_BOUNCE')`);
  // Queued jobs (due in an hour: no worker takes them), one per way a task names the project.
  const { rows: jobs } = await sql<{ id: string }>`
    SELECT (graphile_worker.add_job(task, payload::json, job_key => key, run_at => now() + interval '1 hour')).id::text AS id
    FROM (
      SELECT 'send-email' AS task, json_build_object('emailId', id)::text AS payload, id::text AS key FROM emails WHERE project_id = ${p}
      UNION ALL SELECT 'send-batch', json_build_object('projectId', ${p}::uuid, 'emailIds', json_build_array(gen_random_uuid()))::text, NULL
      UNION ALL SELECT 'campaign-complete', json_build_object('campaignId', ${camp?.id}::uuid)::text, NULL
      UNION ALL SELECT 'campaign-deliver', json_build_object('campaignId', ${camp?.id}::uuid, 'first', gen_random_uuid(), 'last', gen_random_uuid())::text, NULL
      UNION ALL SELECT 'workflow-events', json_build_object('projectId', ${p}::uuid)::text, 'workflow-events:' || ${p}
      UNION ALL SELECT 'workflow-step', json_build_object('projectId', ${p}::uuid, 'ids', json_build_array(gen_random_uuid()))::text, NULL
      UNION ALL SELECT 'segments-recompute', json_build_object('segmentId', ${seg?.id}::uuid)::text, NULL
      UNION ALL SELECT 'contacts-import', json_build_object('jobId', ${job?.id}::uuid)::text, NULL
    ) AS j`.execute(db.db);
  return jobs.map((j) => j.id);
}

/** Rows of the project in every table a reset wipes (all 0 after a reset). */
export async function wipedCounts(db: Db, projectId: string): Promise<Record<string, number>> {
  const tables = [
    'contacts', 'events', 'emails', 'outbox', 'attachment_sets', 'campaigns', 'segments', 'templates', 'workflows', 'workflow_steps',
    'workflow_transitions', 'workflow_executions', 'workflow_step_executions', 'workflow_enrolments', 'workflow_event_queue', 'jobs',
    'idempotency_keys',
  ];
  const { rows } = await sql<{ t: string; n: number }>`${sql.join(
    tables.map((t) => sql`SELECT ${t} AS t, count(*)::int AS n FROM ${sql.table(t)} WHERE project_id = ${projectId}`),
    sql` UNION ALL `,
  )}`.execute(db.db);
  const { rows: [members] } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE s.project_id = ${projectId}`.execute(db.db);
  return { ...Object.fromEntries(rows.map((r) => [r.t, r.n])), segment_members: members?.n ?? 0 };
}

/** Which of these graphile-worker jobs are still queued. */
export async function queuedJobs(db: Db, ids: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`SELECT id::text FROM graphile_worker._private_jobs WHERE id = ANY(${ids}::bigint[])`.execute(db.db);
  return rows.map((r) => r.id);
}

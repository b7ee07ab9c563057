import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { advance, completeStepExecutions } from './advance.js';
import { lockEnrolment, startExecutions } from './start.js';

/** Events per transaction of a `workflow-events` job (a re-run repeats nothing: see below). */
export const EVENTS_CHUNK = 1000;

/**
 * For committed events given by id (the `workflow-events` job's payload `{eventIds}` of migrations
 * 0016/0017, still accepted for jobs queued before migration 0018; the trigger now queues events
 * in `workflow_event_queue`, drained by engine/queue.ts), enrols contacts in the enabled
 * workflows they trigger and resumes the executions waiting for them. Chunks of
 * {@link EVENTS_CHUNK}, per project, each one transaction. Running it again on the same ids
 * changes nothing: an execution is unique per (workflow, source event), and a resumed wait is no
 * longer WAITING.
 */
export async function handleEvents(db: Kysely<Database>, eventIds: readonly string[]): Promise<{ enrolled: number; resumed: number }> {
  let enrolled = 0;
  let resumed = 0;
  for (let i = 0; i < eventIds.length; i += EVENTS_CHUNK) {
    const chunk = eventIds.slice(i, i + EVENTS_CHUNK);
    const projects = await sql<{ project_id: string }>`
      SELECT DISTINCT project_id FROM events WHERE id = ANY(${chunk}::uuid[]) ORDER BY project_id`.execute(db);
    for (const { project_id: projectId } of projects.rows) {
      const r = await db.transaction().execute((trx) => enrolAndResume(trx, projectId, chunk));
      enrolled += r.enrolled;
      resumed += r.resumed;
    }
  }
  return { enrolled, resumed };
}

/**
 * Enrolment then wait resumption for events of one project, in the caller's transaction (the
 * coalesced queue's drain deletes its chunk in the same one: engine/queue.ts).
 */
export async function enrolAndResume(trx: Transaction<Database>, projectId: string, eventIds: readonly string[]): Promise<{ enrolled: number; resumed: number }> {
  // JIT compiling these short set-based statements cost more than running them (enrolment of 500: 756 → 231 ms).
  await sql`SET LOCAL jit = off`.execute(trx);
  const enrolled = await enrol(trx, projectId, eventIds);
  const resumed = await resumeWaits(trx, projectId, eventIds);
  return { enrolled, resumed };
}

/**
 * One execution per (enabled workflow triggered by the event's name, contact): the earliest of
 * the batch's events of that contact; none while one is active, none ever again when the
 * workflow does not allow re-entry (workflow_enrolments). Unique indexes decide each rule.
 */
async function enrol(trx: Transaction<Database>, projectId: string, eventIds: readonly string[]): Promise<number> {
  await lockEnrolment(trx, projectId);
  // Every check is a unique-index probe (ON CONFLICT), never a plan that depends on fresh
  // statistics (a burst fills these tables faster than autovacuum analyses them): `first` records
  // each candidate in workflow_enrolments and returns those entering for the first time (the only
  // ones a workflow without re-entry takes); the executions insert skips an active execution
  // (workflow_executions_active_key) and a source event already used (workflow_executions_source_key).
  const { rows } = await sql<{ id: string }>`
    WITH ev AS MATERIALIZED (
      SELECT e.id, e.contact_id, e.name, e.data, e.created_at
      FROM unnest(${eventIds}::uuid[]) AS i(id) JOIN events e ON e.id = i.id
      WHERE e.project_id = ${projectId}::uuid
    ),
    cand AS MATERIALIZED (
      SELECT DISTINCT ON (w.id, ev.contact_id) w.id AS workflow_id, w.allow_reentry, ev.contact_id, ev.id AS event_id, ev.data
      FROM ev JOIN workflows w ON w.project_id = ${projectId}::uuid AND w.trigger_event = ev.name AND w.enabled
      WHERE NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = ${projectId}::uuid AND p.disabled)
      ORDER BY w.id, ev.contact_id, ev.created_at, ev.id
    ),
    first AS (
      INSERT INTO workflow_enrolments (project_id, workflow_id, contact_id)
      SELECT ${projectId}::uuid, workflow_id, contact_id FROM cand ORDER BY workflow_id, contact_id
      ON CONFLICT DO NOTHING
      RETURNING workflow_id, contact_id
    )
    INSERT INTO workflow_executions (project_id, workflow_id, contact_id, trigger_event_id, event)
    SELECT ${projectId}::uuid, c.workflow_id, c.contact_id, c.event_id, c.data
    FROM cand c
    WHERE c.allow_reentry OR EXISTS (SELECT 1 FROM first f WHERE f.workflow_id = c.workflow_id AND f.contact_id = c.contact_id)
    ORDER BY c.workflow_id, c.contact_id
    ON CONFLICT DO NOTHING
    RETURNING id`.execute(trx);
  await startExecutions(trx, projectId, rows.map((r) => r.id));
  return rows.length;
}

/**
 * Resumes, set-based, the WAITING executions whose awaited event is among these (same contact,
 * recorded at or after the wait began, not after its timeout): the wait's step execution is
 * COMPLETED with branch `event` (output: the event id), the event's data merged into the
 * execution's `event`, and the next step enqueued. The execution row lock is the claim shared
 * with the timeout's step job: whichever locks first decides, the other finds it no longer WAITING.
 */
export async function resumeWaits(trx: Transaction<Database>, projectId: string, eventIds: readonly string[]): Promise<number> {
  const locked = await sql<{ id: string }>`
    SELECT x.id FROM workflow_executions x
    WHERE x.project_id = ${projectId}::uuid AND x.id IN (
      SELECT w.id FROM events e
      JOIN workflow_executions w ON w.project_id = e.project_id AND w.wait_event = e.name AND w.contact_id = e.contact_id
        AND w.status = 'WAITING' AND w.wait_event IS NOT NULL
      WHERE e.id = ANY(${eventIds}::uuid[]) AND e.project_id = ${projectId}::uuid)
    ORDER BY x.id FOR UPDATE`.execute(trx);
  if (locked.rows.length === 0) return 0;
  return (await resumeLocked(trx, projectId, locked.rows.map((r) => r.id), sql`e.id = ANY(${eventIds}::uuid[])`)).length;
}

/**
 * For executions whose rows the caller has locked: the WAITING ones (on a WAIT_FOR_EVENT step
 * execution still WAITING) with a matching event (`eventFilter` narrows the events) resume along
 * `event`. Returns the resumed executions' ids. Shared by the event path and the wait's own job (which looks
 * for an event recorded while it was being entered).
 */
export async function resumeLocked(
  trx: Transaction<Database>,
  projectId: string,
  executionIds: readonly string[],
  eventFilter: RawBuilder<unknown>,
): Promise<string[]> {
  const { rows } = await sql<{ execution_id: string; step_id: string; se_id: string; event_id: string }>`
    WITH m AS (
      SELECT DISTINCT ON (x.id) x.id AS execution_id, se.step_id, se.id AS se_id, e.id AS event_id, e.data
      FROM workflow_executions x
      JOIN workflow_step_executions se ON se.project_id = x.project_id AND se.execution_id = x.id
        AND se.step_id = x.current_step_id AND se.status = 'WAITING'
      JOIN events e ON e.contact_id = x.contact_id AND e.project_id = x.project_id AND e.name = x.wait_event
        AND e.created_at >= x.wait_since AND (se.due_at IS NULL OR e.created_at <= se.due_at)
      WHERE x.project_id = ${projectId}::uuid AND x.id = ANY(${executionIds}::uuid[])
        AND x.status = 'WAITING' AND x.wait_event IS NOT NULL AND ${eventFilter}
      ORDER BY x.id, e.created_at, e.id
    ),
    upd AS (
      UPDATE workflow_executions x SET event = x.event || CASE WHEN jsonb_typeof(m.data) = 'object' THEN m.data ELSE '{}' END
      FROM m WHERE x.project_id = ${projectId}::uuid AND x.id = m.execution_id
    )
    SELECT execution_id, step_id, se_id, event_id FROM m`.execute(trx);
  await completeStepExecutions(trx, projectId, rows.map((r) => ({ id: r.se_id, branch: 'event' as const, output: { eventId: r.event_id } })));
  await advance(trx, projectId, rows.map((r) => ({ executionId: r.execution_id, stepId: r.step_id, branch: 'event' as const })));
  return rows.map((r) => r.execution_id);
}

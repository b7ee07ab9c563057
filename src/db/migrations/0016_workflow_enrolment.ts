import { type Kysely, sql } from 'kysely';

/**
 * Workflow enrolment and wait resumption for every way an event is recorded (track, /events/track,
 * segment computation, the subscription trigger, delivery and tracking events): one statement-level
 * trigger on `events`. For each INSERT statement it looks, per inserted row, for an enabled workflow
 * triggered by that name (workflows_trigger_idx) or a WAITING execution of that contact for that name
 * (workflow_executions_waiting_idx); only when one matches does it enqueue ONE `workflow-events` job
 * with the matching event ids, in the inserting transaction (so the job runs after the events are
 * committed, and never for a rolled-back insert). No workflow interested: two index probes per row, no job.
 *
 * Priority 10 = JobPriority.workflow (src/jobs/queue.ts); the task name is Tasks.workflowEvents.
 * graphile_worker.add_job is resolved when the trigger runs (its schema is migrated after ours).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION enqueue_workflow_events() RETURNS trigger AS $$
    DECLARE
      ids uuid[];
    BEGIN
      SELECT array_agg(e.id) INTO ids
      FROM new_events e
      WHERE EXISTS (SELECT 1 FROM workflows w
                    WHERE w.project_id = e.project_id AND w.trigger_event = e.name AND w.enabled)
         OR EXISTS (SELECT 1 FROM workflow_executions x
                    WHERE x.project_id = e.project_id AND x.wait_event = e.name AND x.contact_id = e.contact_id
                      AND x.status = 'WAITING' AND x.wait_event IS NOT NULL);
      IF ids IS NOT NULL THEN
        PERFORM graphile_worker.add_job('workflow-events', json_build_object('eventIds', ids),
                                        priority => 10, max_attempts => 25);
      END IF;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER events_workflow_enrolment
    AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION enqueue_workflow_events()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER events_workflow_enrolment ON events`.execute(db);
  await sql`DROP FUNCTION enqueue_workflow_events()`.execute(db);
}

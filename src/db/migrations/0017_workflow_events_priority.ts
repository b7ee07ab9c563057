import { type Kysely, sql } from 'kysely';

/**
 * The enrolment trigger's `workflow-events` jobs at priority 5 = JobPriority.workflowSteps
 * (src/jobs/queue.ts), like the workflow-step jobs: ahead of workflow mail (10), so a delivery
 * backlog never delays enrolment. The function of migration 0016 otherwise unchanged.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION enqueue_workflow_events() RETURNS trigger AS $$
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
                                        priority => 5, max_attempts => 25);
      END IF;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION enqueue_workflow_events() RETURNS trigger AS $$
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
}

import { type Kysely, sql } from 'kysely';

/**
 * The events trigger (migration 0018) skips an event whose contact can never enter the workflow
 * again: one that already entered a workflow without re-entry (workflow_enrolments, a primary-key
 * probe). Returning contacts of such workflows then cost /v1/track no queue row and no job
 * (bench/workflows.md, `--mode track`). Skipping is what enrolment would decide: an entry is
 * permanent. Waits are matched as before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION enqueue_workflow_events() RETURNS trigger AS $$
    DECLARE
      projects uuid[];
      p uuid;
    BEGIN
      WITH q AS (
        INSERT INTO workflow_event_queue (project_id, event_id)
        SELECT e.project_id, e.id
        FROM new_events e
        WHERE EXISTS (SELECT 1 FROM workflows w
                      WHERE w.project_id = e.project_id AND w.trigger_event = e.name AND w.enabled
                        AND (w.allow_reentry OR NOT EXISTS (
                          SELECT 1 FROM workflow_enrolments r
                          WHERE r.project_id = w.project_id AND r.workflow_id = w.id AND r.contact_id = e.contact_id)))
           OR EXISTS (SELECT 1 FROM workflow_executions x
                      WHERE x.project_id = e.project_id AND x.wait_event = e.name AND x.contact_id = e.contact_id
                        AND x.status = 'WAITING' AND x.wait_event IS NOT NULL)
        ON CONFLICT DO NOTHING
        RETURNING project_id
      )
      SELECT array_agg(DISTINCT project_id ORDER BY project_id) INTO projects FROM q;
      IF projects IS NOT NULL THEN
        FOREACH p IN ARRAY projects LOOP
          PERFORM graphile_worker.add_job('workflow-events', json_build_object('projectId', p),
                                          run_at => now() + interval '200 milliseconds',
                                          job_key => 'workflow-events:' || p::text,
                                          job_key_mode => 'preserve_run_at',
                                          priority => 5, max_attempts => 25);
        END LOOP;
      END IF;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
}

/** Migration 0018's function. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION enqueue_workflow_events() RETURNS trigger AS $$
    DECLARE
      projects uuid[];
      p uuid;
    BEGIN
      WITH q AS (
        INSERT INTO workflow_event_queue (project_id, event_id)
        SELECT e.project_id, e.id
        FROM new_events e
        WHERE EXISTS (SELECT 1 FROM workflows w
                      WHERE w.project_id = e.project_id AND w.trigger_event = e.name AND w.enabled)
           OR EXISTS (SELECT 1 FROM workflow_executions x
                      WHERE x.project_id = e.project_id AND x.wait_event = e.name AND x.contact_id = e.contact_id
                        AND x.status = 'WAITING' AND x.wait_event IS NOT NULL)
        ON CONFLICT DO NOTHING
        RETURNING project_id
      )
      SELECT array_agg(DISTINCT project_id ORDER BY project_id) INTO projects FROM q;
      IF projects IS NOT NULL THEN
        FOREACH p IN ARRAY projects LOOP
          PERFORM graphile_worker.add_job('workflow-events', json_build_object('projectId', p),
                                          run_at => now() + interval '200 milliseconds',
                                          job_key => 'workflow-events:' || p::text,
                                          job_key_mode => 'preserve_run_at',
                                          priority => 5, max_attempts => 25);
        END LOOP;
      END IF;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
}

import { type Kysely, sql } from 'kysely';

/**
 * Coalesced enrolment (docs/workflows.md "Engine"). The events trigger of migrations 0016/0017
 * enqueued one `workflow-events` job per INSERT statement; /v1/track group-commits ~10–50 events
 * per statement, so every job (and every step job after it: batches keep their size along the
 * graph) carried ~20 executions. Now the trigger, for the same matching events, adds them to
 * `workflow_event_queue` and calls `add_job` ONCE per project of the statement with the job key
 * `workflow-events:<project id>` in mode `preserve_run_at`, due 200 ms later: every statement
 * within that window lands in the same job, which drains the project's queue in chunks of 1,000
 * (src/modules/workflows/engine/queue.ts). Each chunk's DELETE and its enrolment commit together.
 *
 * Priority 5 = JobPriority.workflowSteps, 25 attempts = the step jobs' (src/jobs/queue.ts,
 * engine/jobs.ts); the key prefix and window are EVENT_JOB_KEY_PREFIX / EVENTS_WINDOW_MS.
 * `created_at` (the inserting transaction's start) orders the drain and finds stranded rows (cron).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE workflow_event_queue (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      event_id uuid NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, event_id)
    )`.execute(db);
  await sql`CREATE INDEX workflow_event_queue_order_idx ON workflow_event_queue (project_id, created_at, event_id)`.execute(db);
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

/** Back to migration 0017's function (one job per statement with the event ids); rows still queued become such jobs. */
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
                                        priority => 5, max_attempts => 25);
      END IF;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    SELECT graphile_worker.add_job('workflow-events', json_build_object('eventIds', array_agg(event_id)), priority => 5, max_attempts => 25)
    FROM workflow_event_queue GROUP BY project_id`.execute(db);
  await sql`DROP TABLE workflow_event_queue`.execute(db);
}

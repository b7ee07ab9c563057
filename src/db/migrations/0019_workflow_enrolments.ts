import { type Kysely, sql } from 'kysely';

/**
 * Who has ever entered each workflow: one row per (workflow, contact), written by enrolment and
 * manual starts with INSERT … ON CONFLICT DO NOTHING. The re-entry rule (allowReentry false: once
 * ever) reads the rows that insert returns, so it is a probe of this primary key whatever the
 * planner's statistics say; a NOT EXISTS over workflow_executions was planned as a scan of the
 * workflow's executions per event while a burst outran autovacuum's ANALYZE (docs/workflows.md
 * "Throughput"). Existing executions fill it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE workflow_enrolments (
      project_id uuid NOT NULL,
      workflow_id uuid NOT NULL,
      contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, workflow_id, contact_id),
      FOREIGN KEY (project_id, workflow_id) REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`.execute(db);
  await sql`CREATE INDEX workflow_enrolments_contact_idx ON workflow_enrolments (contact_id)`.execute(db);
  await sql`
    INSERT INTO workflow_enrolments (project_id, workflow_id, contact_id, created_at)
    SELECT project_id, workflow_id, contact_id, min(started_at) FROM workflow_executions
    GROUP BY project_id, workflow_id, contact_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE workflow_enrolments`.execute(db);
}

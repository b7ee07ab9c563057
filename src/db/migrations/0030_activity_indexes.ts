import { type Kysely, sql } from 'kysely';

/**
 * The activity feed reads workflow executions newest first by when they started and by when
 * they ended (docs/activity.md). Without these, each page sorted every execution of the project
 * (100,000 executions: 60–115 ms per source on the bench machine, growing with the table). Both
 * are on `workflow_executions` only (nothing on events or emails). The second is partial: an
 * entry is written once, by the UPDATE that ends an execution (already not HOT: `status` is in
 * workflow_executions_list_idx). Write cost measured in bench/activity.md.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX workflow_executions_project_started_idx ON workflow_executions (project_id, started_at, id)`.execute(db);
  await sql`
    CREATE INDEX workflow_executions_project_ended_idx ON workflow_executions (project_id, status, completed_at, id)
      WHERE status IN ('COMPLETED', 'EXITED', 'FAILED')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX workflow_executions_project_ended_idx`.execute(db);
  await sql`DROP INDEX workflow_executions_project_started_idx`.execute(db);
}

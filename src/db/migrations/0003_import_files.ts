import { type Kysely, sql } from 'kysely';

/**
 * Uploaded CSV files of contact imports, stored durably until their job has run: chunks of
 * ~256 KB in upload order, written in the transaction that creates the job row and enqueues
 * its job, deleted when the job finishes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE import_chunks (
      job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
      seq integer NOT NULL CHECK (seq >= 0),
      data bytea NOT NULL,
      PRIMARY KEY (job_id, seq)
    )`.execute(db);
  // Short-lived rows read once: out-of-line without compression is cheaper than pglz on ~5 MB
  // per upload, and the space is freed as soon as the job ends.
  await sql`ALTER TABLE import_chunks ALTER COLUMN data SET STORAGE EXTERNAL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE import_chunks`.execute(db);
}

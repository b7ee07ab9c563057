import { type Kysely, sql } from 'kysely';

/**
 * Image uploads (src/modules/uploads, docs/uploads.md):
 * - uploads: one row per stored image of a project. `key` names the object in storage
 *   (`<id>.<ext>`, served at /files/:key). The primary key carries `size` so the quota's sum is an
 *   index-only scan; ids are uuid v7, so the key order is also the newest-first list order.
 * - upload_deletions: the storage objects still to remove (a durable queue drained by the
 *   `uploads-delete` job). Rows are written in the transaction that deletes the upload rows (a
 *   DELETE /uploads/:id, a project reset or deletion), and before an upload writes its object
 *   (`not_before` an hour later: a crash between the write and the commit leaves an object the
 *   queue still removes; the commit deletes that row). No foreign key: the rows outlive the
 *   project whose files they name.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE uploads (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      key text NOT NULL CHECK (key ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\\.(jpg|png|gif|webp)$'),
      filename text NOT NULL,
      content_type text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/gif', 'image/webp')),
      size bigint NOT NULL CHECK (size > 0),
      width int NOT NULL CHECK (width > 0),
      height int NOT NULL CHECK (height > 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id) INCLUDE (size),
      UNIQUE (project_id, key)
    )`.execute(db);
  await sql`
    CREATE TABLE upload_deletions (
      project_id uuid NOT NULL,
      key text NOT NULL,
      not_before timestamptz NOT NULL DEFAULT now(),
      attempts int NOT NULL DEFAULT 0,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, key)
    )`.execute(db);
  // The drain takes the due rows oldest first.
  await sql`CREATE INDEX upload_deletions_due_idx ON upload_deletions (not_before)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE upload_deletions, uploads`.execute(db);
}

import { type Kysely, sql } from 'kysely';

/**
 * Attachments of received mail (docs/bounces.md "Attachments", src/modules/bounces), written in
 * the transaction of their inbound_messages row when INBOUND_STORE_ATTACHMENTS is on: one row per
 * attachment (its position `index` in the message), stored or not (`reason` says why not). A
 * stored one's bytes are the private object `storage_key` of the uploads storage (never served by
 * /files/:key), with their SHA-256. No foreign key to inbound_messages: a project reset wipes both
 * (and queues the objects' deletion), its deletion cascades. The primary key serves the download
 * (project, message, index); the partial index carries `size` for the project's attachment quota
 * (an index-only sum).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE inbound_attachments (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      inbound_message_id uuid NOT NULL,
      index int NOT NULL CHECK (index >= 0),
      filename text,
      content_type text NOT NULL,
      size bigint NOT NULL CHECK (size >= 0),
      stored boolean NOT NULL,
      reason text,
      storage_key text CHECK (storage_key ~ '^private/[0-9a-f-]{36}$'),
      sha256 text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, inbound_message_id, index),
      CHECK (stored = (storage_key IS NOT NULL AND sha256 IS NOT NULL))
    )`.execute(db);
  await sql`CREATE INDEX inbound_attachments_stored_idx ON inbound_attachments (project_id) INCLUDE (size) WHERE stored`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE inbound_attachments`.execute(db);
}

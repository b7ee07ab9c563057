import { type Kysely, sql } from 'kysely';

/**
 * Distribution-ready keys (DESIGN §1, docs/scaling.md): every tenant table's primary key, unique
 * constraints and foreign keys between tenant tables include `project_id`, so that Citus can
 * distribute them by project.
 *
 * Keys lead on `id` (`(id, project_id)`): Citus needs the distribution column in the key, not in
 * front, and an index that leads on the id still serves every lookup by id alone (the delivery
 * path, tracking links, bounce matching) without a second index on the write path
 * (docs/scaling.md "Key order" has the measurements). `segment_members` and `import_chunks` get
 * the `project_id` of their segment and job. SYSTEM emails (the instance's own account mail, with
 * no project until now) and their captured messages take INSTANCE_PROJECT_ID: a row of `projects`
 * that is no project (disabled, keys nobody holds, no members), because a distributed table has
 * no row without its distribution column.
 */

/** Tables whose primary key was `(id)`: it becomes `(id, project_id)`. */
const KEYED_BY_ID = [
  'contacts', 'events', 'emails', 'campaigns', 'segments', 'templates', 'jobs', 'outbox',
  'attachment_sets', 'contact_data_indexes', 'inbound_messages',
] as const;

/** src/db/schema.ts INSTANCE_PROJECT_ID: the project row of the instance's own account mail. */
const INSTANCE_PROJECT_ID = '00000000-0000-0000-0000-000000000000';

/** Foreign keys on the id alone, as `[table, constraint, column, target, on delete]`. */
const FOREIGN_KEYS = [
  ['analytics_campaign_counts', 'analytics_campaign_counts_campaign_id_fkey', 'campaign_id', 'campaigns', 'CASCADE'],
  ['campaign_email_counts', 'campaign_email_counts_campaign_id_fkey', 'campaign_id', 'campaigns', 'CASCADE'],
  ['campaign_link_counts', 'campaign_link_counts_campaign_id_fkey', 'campaign_id', 'campaigns', 'CASCADE'],
  ['campaigns', 'campaigns_segment_id_fkey', 'segment_id', 'segments', 'RESTRICT'],
  ['emails', 'emails_attachment_set_id_fkey', 'attachment_set_id', 'attachment_sets', 'SET NULL (attachment_set_id)'],
  ['emails', 'emails_campaign_fk', 'campaign_id', 'campaigns', 'SET NULL (campaign_id)'],
  ['emails', 'emails_contact_id_fkey', 'contact_id', 'contacts', 'SET NULL (contact_id)'],
  ['emails', 'emails_template_id_fkey', 'template_id', 'templates', 'SET NULL (template_id)'],
  ['events', 'events_contact_id_fkey', 'contact_id', 'contacts', 'CASCADE'],
  ['import_chunks', 'import_chunks_job_id_fkey', 'job_id', 'jobs', 'CASCADE'],
  ['outbox', 'outbox_email_id_fkey', 'email_id', 'emails', 'CASCADE'],
  ['segment_members', 'segment_members_contact_id_fkey', 'contact_id', 'contacts', 'CASCADE'],
  ['segment_members', 'segment_members_segment_id_fkey', 'segment_id', 'segments', 'CASCADE'],
  ['workflow_enrolments', 'workflow_enrolments_contact_id_fkey', 'contact_id', 'contacts', 'CASCADE'],
  ['workflow_executions', 'workflow_executions_contact_id_fkey', 'contact_id', 'contacts', 'CASCADE'],
  ['workflow_steps', 'workflow_steps_template_id_fkey', 'template_id', 'templates', 'NO ACTION'],
] as const;

/** Trigger functions whose ON CONFLICT names a campaign rollup's key (0031). */
const ROLLUP_CONFLICTS: [string, string][] = [
  ['ON CONFLICT (campaign_id, bucket, shard)', 'ON CONFLICT (campaign_id, bucket, shard, project_id)'],
  ['ON CONFLICT (campaign_id, url_key, shard)', 'ON CONFLICT (campaign_id, url_key, shard, project_id)'],
];
const ROLLUP_FUNCTIONS = ['campaign_email_update()', 'campaign_email_insert()', 'campaign_link_click(uuid, text)'];

export async function up(db: Kysely<unknown>): Promise<void> {
  // contract: the code before this migration (no release was tagged before it) names the old
  // unique keys in its ON CONFLICT targets (emails per campaign and per workflow step, the outbox,
  // soft bounces, the campaign rollups) and writes segment members and import chunks without a
  // project: stop every older process before it runs (docs/operations.md "Upgrades").
  await sql`
    INSERT INTO projects (id, name, public_key, secret_key, disabled, disabled_reason, disabled_at)
    VALUES (${INSTANCE_PROJECT_ID}::uuid, 'Instance mail', 'instance_' || gen_random_uuid() || gen_random_uuid(),
            'instance_' || gen_random_uuid() || gen_random_uuid(), true, 'The instance''s own account mail: not a project', now())`.execute(db);
  await sql`ALTER TABLE emails DROP CONSTRAINT emails_system_check`.execute(db);
  await sql`UPDATE emails SET project_id = ${INSTANCE_PROJECT_ID}::uuid WHERE project_id IS NULL`.execute(db);
  await sql`ALTER TABLE emails ALTER COLUMN project_id SET NOT NULL`.execute(db);
  await sql`
    ALTER TABLE emails ADD CONSTRAINT emails_system_check
      CHECK ((source = 'SYSTEM') = (project_id = ${sql.lit(INSTANCE_PROJECT_ID)}::uuid) AND (source = 'SYSTEM') = (system_kind IS NOT NULL))`.execute(db);
  await sql`UPDATE outbox SET project_id = ${INSTANCE_PROJECT_ID}::uuid WHERE project_id IS NULL`.execute(db);
  await sql`ALTER TABLE outbox ALTER COLUMN project_id SET NOT NULL`.execute(db);

  // The two tables without project_id take their parent's.
  await sql`ALTER TABLE segment_members ADD COLUMN project_id uuid`.execute(db);
  await sql`UPDATE segment_members m SET project_id = s.project_id FROM segments s WHERE s.id = m.segment_id`.execute(db);
  await sql`ALTER TABLE segment_members ALTER COLUMN project_id SET NOT NULL`.execute(db);
  await sql`ALTER TABLE import_chunks ADD COLUMN project_id uuid`.execute(db);
  await sql`UPDATE import_chunks c SET project_id = j.project_id FROM jobs j WHERE j.id = c.job_id`.execute(db);
  await sql`ALTER TABLE import_chunks ALTER COLUMN project_id SET NOT NULL`.execute(db);

  // Foreign keys depend on the keys they reference: they go first and come back composite.
  for (const [table, name] of FOREIGN_KEYS) await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT ${sql.ref(name)}`.execute(db);
  for (const table of KEYED_BY_ID) {
    await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT ${sql.ref(`${table}_pkey`)}, ADD CONSTRAINT ${sql.ref(`${table}_pkey`)} PRIMARY KEY (id, project_id)`.execute(db);
  }

  // Unique keys: project_id added last, so each index still serves the lookups it served.
  await sql`DROP INDEX emails_campaign_contact_key`.execute(db);
  await sql`CREATE UNIQUE INDEX emails_campaign_contact_key ON emails (campaign_id, contact_id, project_id) WHERE campaign_id IS NOT NULL`.execute(db);
  await sql`DROP INDEX emails_workflow_step_key`.execute(db);
  await sql`CREATE UNIQUE INDEX emails_workflow_step_key ON emails (workflow_execution_id, workflow_step_id, project_id) WHERE workflow_execution_id IS NOT NULL`.execute(db);
  // Message-IDs are unique by construction (each names its email's id); the index finds the email
  // a bounce report names. Unique across projects it cannot stay, and with project_id it would
  // only be wider on every write of an email.
  await sql`DROP INDEX emails_message_id_key`.execute(db);
  await sql`CREATE INDEX emails_message_id_idx ON emails (message_id)`.execute(db);
  await sql`ALTER TABLE outbox DROP CONSTRAINT outbox_email_id_key, ADD CONSTRAINT outbox_email_id_key UNIQUE (email_id, project_id)`.execute(db);
  await sql`ALTER TABLE soft_bounces DROP CONSTRAINT soft_bounces_email_id_report_key_key, ADD CONSTRAINT soft_bounces_pkey PRIMARY KEY (email_id, report_key, project_id)`.execute(db);
  await sql`ALTER TABLE segment_members DROP CONSTRAINT segment_members_pkey, ADD CONSTRAINT segment_members_pkey PRIMARY KEY (segment_id, contact_id, project_id)`.execute(db);
  await sql`ALTER TABLE import_chunks DROP CONSTRAINT import_chunks_pkey, ADD CONSTRAINT import_chunks_pkey PRIMARY KEY (job_id, seq, project_id)`.execute(db);
  await sql`ALTER TABLE campaign_email_counts DROP CONSTRAINT campaign_email_counts_pkey, ADD CONSTRAINT campaign_email_counts_pkey PRIMARY KEY (campaign_id, bucket, shard, project_id)`.execute(db);
  await sql`ALTER TABLE campaign_link_counts DROP CONSTRAINT campaign_link_counts_pkey, ADD CONSTRAINT campaign_link_counts_pkey PRIMARY KEY (campaign_id, url_key, shard, project_id)`.execute(db);
  await rewriteFunctions(db, ROLLUP_CONFLICTS);

  for (const [table, name, column, target, onDelete] of FOREIGN_KEYS) {
    await sql`ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${sql.ref(name)}
      FOREIGN KEY (${sql.ref(column)}, project_id) REFERENCES ${sql.table(target)} (id, project_id) ON DELETE ${sql.raw(onDelete)}`.execute(db);
  }
}

/** Re-creates the rollup trigger functions with each `[from, to]` replaced in their text. */
async function rewriteFunctions(db: Kysely<unknown>, replacements: [string, string][]): Promise<void> {
  for (const signature of ROLLUP_FUNCTIONS) {
    const { rows } = await sql<{ def: string }>`SELECT pg_get_functiondef(${signature}::regprocedure) AS def`.execute(db);
    const before = rows[0]?.def ?? '';
    const after = replacements.reduce((text, [from, to]) => text.replaceAll(from, to), before);
    if (after === before) throw new Error(`${signature} names no campaign rollup key`);
    await sql.raw(after).execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const [table, name] of FOREIGN_KEYS) await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT ${sql.ref(name)}`.execute(db);
  await rewriteFunctions(db, ROLLUP_CONFLICTS.map(([from, to]) => [to, from]));
  await sql`ALTER TABLE campaign_link_counts DROP CONSTRAINT campaign_link_counts_pkey, ADD CONSTRAINT campaign_link_counts_pkey PRIMARY KEY (campaign_id, url_key, shard)`.execute(db);
  await sql`ALTER TABLE campaign_email_counts DROP CONSTRAINT campaign_email_counts_pkey, ADD CONSTRAINT campaign_email_counts_pkey PRIMARY KEY (campaign_id, bucket, shard)`.execute(db);
  await sql`ALTER TABLE import_chunks DROP CONSTRAINT import_chunks_pkey, ADD CONSTRAINT import_chunks_pkey PRIMARY KEY (job_id, seq)`.execute(db);
  await sql`ALTER TABLE segment_members DROP CONSTRAINT segment_members_pkey, ADD CONSTRAINT segment_members_pkey PRIMARY KEY (segment_id, contact_id)`.execute(db);
  await sql`ALTER TABLE soft_bounces DROP CONSTRAINT soft_bounces_pkey, ADD CONSTRAINT soft_bounces_email_id_report_key_key UNIQUE (email_id, report_key)`.execute(db);
  await sql`ALTER TABLE outbox DROP CONSTRAINT outbox_email_id_key, ADD CONSTRAINT outbox_email_id_key UNIQUE (email_id)`.execute(db);
  await sql`DROP INDEX emails_message_id_idx`.execute(db);
  await sql`CREATE UNIQUE INDEX emails_message_id_key ON emails (message_id)`.execute(db);
  await sql`DROP INDEX emails_workflow_step_key`.execute(db);
  await sql`CREATE UNIQUE INDEX emails_workflow_step_key ON emails (workflow_execution_id, workflow_step_id) WHERE workflow_execution_id IS NOT NULL`.execute(db);
  await sql`DROP INDEX emails_campaign_contact_key`.execute(db);
  await sql`CREATE UNIQUE INDEX emails_campaign_contact_key ON emails (campaign_id, contact_id) WHERE campaign_id IS NOT NULL`.execute(db);
  for (const table of KEYED_BY_ID) {
    await sql`ALTER TABLE ${sql.table(table)} DROP CONSTRAINT ${sql.ref(`${table}_pkey`)}, ADD CONSTRAINT ${sql.ref(`${table}_pkey`)} PRIMARY KEY (id)`.execute(db);
  }
  for (const [table, name, column, target, onDelete] of FOREIGN_KEYS) {
    const action = onDelete.startsWith('SET NULL') ? 'SET NULL' : onDelete;
    await sql`ALTER TABLE ${sql.table(table)} ADD CONSTRAINT ${sql.ref(name)}
      FOREIGN KEY (${sql.ref(column)}) REFERENCES ${sql.table(target)} (id) ON DELETE ${sql.raw(action)}`.execute(db);
  }
  await sql`ALTER TABLE import_chunks DROP COLUMN project_id`.execute(db);
  await sql`ALTER TABLE segment_members DROP COLUMN project_id`.execute(db);
  await sql`ALTER TABLE outbox ALTER COLUMN project_id DROP NOT NULL`.execute(db);
  await sql`UPDATE outbox SET project_id = NULL WHERE project_id = ${INSTANCE_PROJECT_ID}::uuid`.execute(db);
  await sql`ALTER TABLE emails DROP CONSTRAINT emails_system_check`.execute(db);
  await sql`ALTER TABLE emails ALTER COLUMN project_id DROP NOT NULL`.execute(db);
  await sql`UPDATE emails SET project_id = NULL WHERE project_id = ${INSTANCE_PROJECT_ID}::uuid`.execute(db);
  await sql`
    ALTER TABLE emails ADD CONSTRAINT emails_system_check
      CHECK ((source = 'SYSTEM') = (project_id IS NULL) AND (source = 'SYSTEM') = (system_kind IS NOT NULL))`.execute(db);
  await sql`DELETE FROM projects WHERE id = ${INSTANCE_PROJECT_ID}::uuid`.execute(db);
}

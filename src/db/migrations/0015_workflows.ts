import { type Kysely, sql } from 'kysely';

/**
 * Workflows (DESIGN §9, docs/workflows.md): definitions (workflows, steps, transitions), runs
 * (executions, step executions), the workflow keys of the email rows SEND_EMAIL steps create,
 * and the per-project secret that signs WEBHOOK calls.
 *
 * New tenant tables key on (project_id, id) and reference each other with project_id (DESIGN §1).
 * References to older tables (contacts, templates) use their single-column keys.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // 2 × 122 random bits from gen_random_uuid (a CSPRNG); existing projects get one each.
  await sql`
    ALTER TABLE projects ADD COLUMN webhook_secret text NOT NULL
      DEFAULT ('whsec_' || replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''))`.execute(db);

  await sql`
    CREATE TABLE workflows (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      description text NOT NULL DEFAULT '' CHECK (length(description) <= 1000),
      trigger_type text NOT NULL DEFAULT 'EVENT' CHECK (trigger_type IN ('EVENT')),
      trigger_config jsonb NOT NULL,
      trigger_event text GENERATED ALWAYS AS (trigger_config ->> 'eventName') STORED,
      enabled boolean NOT NULL DEFAULT false,
      allow_reentry boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id)
    )`.execute(db);
  await sql`CREATE INDEX workflows_project_created_idx ON workflows (project_id, created_at, id)`.execute(db);
  // Enrolment: the enabled workflows of a project triggered by an event name.
  await sql`CREATE INDEX workflows_trigger_idx ON workflows (project_id, trigger_event) WHERE enabled`.execute(db);

  await sql`
    CREATE TABLE workflow_steps (
      project_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      workflow_id uuid NOT NULL,
      type text NOT NULL CHECK (type IN ('TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT')),
      name text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
      config jsonb NOT NULL DEFAULT '{}',
      position_x double precision NOT NULL DEFAULT 0,
      position_y double precision NOT NULL DEFAULT 0,
      -- SEND_EMAIL's template (NO ACTION: a used template cannot be deleted; a cascade from the project can).
      template_id uuid REFERENCES templates (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id),
      FOREIGN KEY (project_id, workflow_id) REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`.execute(db);
  await sql`CREATE INDEX workflow_steps_workflow_idx ON workflow_steps (project_id, workflow_id, created_at, id)`.execute(db);
  await sql`CREATE UNIQUE INDEX workflow_steps_one_trigger_key ON workflow_steps (project_id, workflow_id) WHERE type = 'TRIGGER'`.execute(db);
  await sql`CREATE INDEX workflow_steps_template_idx ON workflow_steps (template_id) WHERE template_id IS NOT NULL`.execute(db);

  await sql`
    CREATE TABLE workflow_transitions (
      project_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      workflow_id uuid NOT NULL,
      from_step_id uuid NOT NULL,
      to_step_id uuid NOT NULL,
      branch text CHECK (branch IN ('yes', 'no', 'event', 'timeout')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id),
      FOREIGN KEY (project_id, workflow_id) REFERENCES workflows (project_id, id) ON DELETE CASCADE,
      FOREIGN KEY (project_id, from_step_id) REFERENCES workflow_steps (project_id, id) ON DELETE CASCADE,
      FOREIGN KEY (project_id, to_step_id) REFERENCES workflow_steps (project_id, id) ON DELETE CASCADE,
      CHECK (from_step_id <> to_step_id)
    )`.execute(db);
  // One outgoing transition per (step, branch); a step without branches has at most one (NULL = NULL here).
  await sql`
    CREATE UNIQUE INDEX workflow_transitions_branch_key
      ON workflow_transitions (project_id, from_step_id, branch) NULLS NOT DISTINCT`.execute(db);
  await sql`CREATE INDEX workflow_transitions_to_idx ON workflow_transitions (project_id, to_step_id)`.execute(db);
  await sql`CREATE INDEX workflow_transitions_workflow_idx ON workflow_transitions (project_id, workflow_id)`.execute(db);

  await sql`
    CREATE TABLE workflow_executions (
      project_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      workflow_id uuid NOT NULL,
      contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'RUNNING' CHECK (status IN ('RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED')),
      -- The event that enrolled the contact (null for a manual start).
      trigger_event_id uuid,
      -- Exposed to templates and conditions as event.* (the trigger's data, merged with resumed waits' data).
      event jsonb NOT NULL DEFAULT '{}',
      context jsonb NOT NULL DEFAULT '{}',
      current_step_id uuid,
      -- While WAITING on a WAIT_FOR_EVENT step: the awaited name and when the wait began.
      wait_event text,
      wait_since timestamptz,
      error text,
      exit_reason text,
      started_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id),
      FOREIGN KEY (project_id, workflow_id) REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`.execute(db);
  // At most one execution per (workflow, source event), however often enrolment runs.
  await sql`
    CREATE UNIQUE INDEX workflow_executions_source_key ON workflow_executions (project_id, workflow_id, trigger_event_id)
      WHERE trigger_event_id IS NOT NULL`.execute(db);
  // Never two active executions of one workflow for one contact.
  await sql`
    CREATE UNIQUE INDEX workflow_executions_active_key ON workflow_executions (project_id, workflow_id, contact_id)
      WHERE status IN ('RUNNING', 'WAITING')`.execute(db);
  // allowReentry false: has this contact ever run this workflow?
  await sql`CREATE INDEX workflow_executions_contact_idx ON workflow_executions (project_id, workflow_id, contact_id)`.execute(db);
  await sql`CREATE INDEX workflow_executions_list_idx ON workflow_executions (project_id, workflow_id, status, started_at, id)`.execute(db);
  // Resuming waits: one probe per (event name, contact) of a committed event batch.
  await sql`
    CREATE INDEX workflow_executions_waiting_idx ON workflow_executions (project_id, wait_event, contact_id)
      WHERE status = 'WAITING' AND wait_event IS NOT NULL`.execute(db);

  await sql`
    CREATE TABLE workflow_step_executions (
      project_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      execution_id uuid NOT NULL,
      workflow_id uuid NOT NULL,
      step_id uuid NOT NULL,
      status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'WAITING', 'RUNNING', 'COMPLETED', 'SKIPPED', 'FAILED')),
      -- The outgoing branch taken (yes/no from CONDITION, event/timeout from WAIT_FOR_EVENT).
      branch text,
      output jsonb,
      error text,
      attempts integer NOT NULL DEFAULT 0,
      -- DELAY end or WAIT_FOR_EVENT timeout.
      due_at timestamptz,
      started_at timestamptz,
      completed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id),
      -- The graph has no cycles, so an execution visits a step at most once.
      UNIQUE (project_id, execution_id, step_id),
      FOREIGN KEY (project_id, execution_id) REFERENCES workflow_executions (project_id, id) ON DELETE CASCADE,
      FOREIGN KEY (project_id, step_id) REFERENCES workflow_steps (project_id, id) ON DELETE CASCADE
    )`.execute(db);
  // Per-step analytics (GET /workflows/:id): counts by status from the index alone.
  await sql`CREATE INDEX workflow_step_executions_step_status_idx ON workflow_step_executions (project_id, step_id, status)`.execute(db);
  // Upcoming delays and wait timeouts.
  await sql`CREATE INDEX workflow_step_executions_due_idx ON workflow_step_executions (project_id, due_at) WHERE status = 'WAITING'`.execute(db);

  // SEND_EMAIL's email: one per (execution, step), however often the step's job runs.
  await sql`ALTER TABLE emails ADD COLUMN workflow_execution_id uuid, ADD COLUMN workflow_step_id uuid`.execute(db);
  await sql`
    CREATE UNIQUE INDEX emails_workflow_step_key ON emails (workflow_execution_id, workflow_step_id)
      WHERE workflow_execution_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX emails_workflow_step_status_idx ON emails (workflow_step_id, status) WHERE workflow_step_id IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE emails DROP COLUMN workflow_execution_id, DROP COLUMN workflow_step_id`.execute(db);
  await sql`DROP TABLE workflow_step_executions, workflow_executions, workflow_transitions, workflow_steps, workflows`.execute(db);
  await sql`ALTER TABLE projects DROP COLUMN webhook_secret`.execute(db);
}

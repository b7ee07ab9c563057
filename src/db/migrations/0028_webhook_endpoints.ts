import { type Kysely, sql } from 'kysely';

/**
 * Outgoing delivery-status webhooks (src/modules/webhook-endpoints, docs/webhooks-outgoing.md).
 *
 * - webhook_endpoints: a project's registered URLs, the event types each receives, its `whsec_`
 *   secret sealed with a key derived from SECRET (src/lib/secret-box.ts: the worker opens it to
 *   sign), its health (`failing_since`: the first failed attempt since the last delivered one)
 *   and `lease_until`: the time before which no other deliverer may run for it (one at a time).
 * - webhook_deliveries: one row per (event, endpoint), written by the triggers below with the
 *   payload's `data` built at capture time; the delivery log and the retry schedule.
 *
 * Capture is set-based and costs the write paths nothing when no enabled endpoint of the project
 * wants the event: a STATEMENT-level AFTER INSERT trigger on `events` (transition table, like
 * the workflow trigger of migrations 0016–0020, which it leaves alone) joins the inserted rows to
 * the project's enabled endpoints subscribed to each name; campaign completion (status → SENT)
 * and workflow execution ends (COMPLETED/EXITED → workflow.completed, FAILED → workflow.failed)
 * use ROW triggers whose WHEN clause skips every other update without calling a function. No
 * DELETE trigger: a project reset wipes these tables without triggers (projects/lifecycle.repo.ts).
 *
 * The deliverer is woken by ONE graphile-worker job per endpoint (`webhook-deliver`, job key
 * `webhook-deliver:<endpoint id>`, preserve_run_at, due 250 ms later so a burst lands in one run),
 * added in the inserting transaction; `webhook_wake` remembers the endpoints it woke in a
 * transaction-local setting, so a transaction adds each endpoint's job once whatever its number
 * of statements. The task name is Tasks.webhookDeliver (src/jobs/queue.ts), run by the worker's
 * separate webhook runner (src/worker.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE webhook_endpoints (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      url text NOT NULL,
      events text[] NOT NULL CHECK (cardinality(events) > 0),
      enabled boolean NOT NULL DEFAULT true,
      secret text NOT NULL,
      failing_since timestamptz,
      disabled_reason text,
      disabled_at timestamptz,
      lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id)
    )`.execute(db);

  await sql`
    CREATE TABLE webhook_deliveries (
      project_id uuid NOT NULL,
      id uuid NOT NULL DEFAULT uuid_generate_v7(),
      endpoint_id uuid NOT NULL,
      -- X-Webhook-Id and the payload's id: the events row's id, or a new id for campaign/workflow events.
      event_id uuid NOT NULL,
      event_type text NOT NULL,
      event_at timestamptz NOT NULL,
      data jsonb NOT NULL,
      status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
      attempts integer NOT NULL DEFAULT 0,
      -- PENDING: due then (a claimed row is pushed 2 minutes ahead: a crashed deliverer's rows come back).
      next_attempt_at timestamptz DEFAULT now(),
      last_attempt_at timestamptz,
      status_code integer,
      response_excerpt text,
      error text,
      duration_ms integer,
      finished_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, id),
      FOREIGN KEY (project_id, endpoint_id) REFERENCES webhook_endpoints (project_id, id) ON DELETE CASCADE
    )`.execute(db);
  // The deliverer's claim: an endpoint's due rows, earliest first.
  await sql`
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (project_id, endpoint_id, next_attempt_at)
      WHERE status = 'PENDING'`.execute(db);
  // The log (newest first by uuid v7 id) and the retention cleanup (id below a time's floor).
  await sql`CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (project_id, endpoint_id, id)`.execute(db);

  await sql`
    CREATE FUNCTION webhook_wake(p_project uuid, p_endpoint uuid) RETURNS void AS $$
    DECLARE
      woken text := coalesce(current_setting('webhooks.woken', true), '');
    BEGIN
      IF strpos(woken, p_endpoint::text) > 0 THEN
        RETURN;
      END IF;
      PERFORM graphile_worker.add_job('webhook-deliver', json_build_object('projectId', p_project, 'endpointId', p_endpoint),
                                      run_at => now() + interval '250 milliseconds',
                                      job_key => 'webhook-deliver:' || p_endpoint::text,
                                      job_key_mode => 'preserve_run_at', max_attempts => 5);
      PERFORM set_config('webhooks.woken', woken || p_endpoint::text || ',', true);
    END
    $$ LANGUAGE plpgsql`.execute(db);

  await sql`
    CREATE FUNCTION webhook_iso(t timestamptz) RETURNS text AS $$
      SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    $$ LANGUAGE sql IMMUTABLE PARALLEL SAFE`.execute(db);

  // Email lifecycle and subscription events, as the events table records them (first open, first
  // click of each email: recordMilestone in src/modules/emails/status.ts).
  await sql`
    CREATE FUNCTION webhook_capture_events() RETURNS trigger AS $$
    DECLARE
      r record;
    BEGIN
      FOR r IN
        WITH d AS (
          INSERT INTO webhook_deliveries (project_id, endpoint_id, event_id, event_type, event_at, data)
          SELECT e.project_id, w.id, e.id, e.name, e.created_at,
            CASE WHEN e.name LIKE 'contact.%' THEN
              jsonb_build_object('contact', jsonb_build_object('id', c.id, 'email', c.email, 'subscribed', c.subscribed),
                                 'occurredAt', webhook_iso(e.created_at))
            ELSE
              jsonb_build_object(
                'emailId', coalesce(m.id::text, e.data ->> 'emailId'),
                'contact', jsonb_build_object('id', c.id, 'email', c.email),
                'occurredAt', webhook_iso(e.created_at),
                'to', m.to_email, 'from', m.from_email, 'subject', m.subject, 'messageId', m.message_id,
                'campaignId', m.campaign_id, 'templateId', m.template_id,
                'workflowId', x.workflow_id, 'workflowExecutionId', m.workflow_execution_id)
              || jsonb_strip_nulls(jsonb_build_object(
                'url', e.data -> 'url', 'machine', e.data -> 'machine',
                'bounceType', e.data -> 'bounceType', 'bounceSubType', e.data -> 'bounceSubType',
                'diagnosticCode', e.data -> 'diagnosticCode',
                'complaintFeedbackType', e.data -> 'complaintFeedbackType', 'feedbackId', e.data -> 'feedbackId',
                'smtpResponse', e.data -> 'smtpResponse'))
            END
          FROM new_events e
          JOIN webhook_endpoints w ON w.project_id = e.project_id AND w.enabled AND e.name = ANY (w.events)
          JOIN contacts c ON c.id = e.contact_id
          LEFT JOIN emails m ON e.name LIKE 'email.%'
            AND m.id = CASE WHEN e.data ->> 'emailId' ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
                            THEN (e.data ->> 'emailId')::uuid END
          LEFT JOIN workflow_executions x ON x.project_id = m.project_id AND x.id = m.workflow_execution_id
          RETURNING project_id, endpoint_id
        )
        SELECT DISTINCT project_id, endpoint_id FROM d
      LOOP
        PERFORM webhook_wake(r.project_id, r.endpoint_id);
      END LOOP;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER events_webhook_capture
    AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_capture_events()`.execute(db);

  // campaign.sent: the campaign reached SENT (every email finished: campaign-complete).
  await sql`
    CREATE FUNCTION webhook_capture_campaign() RETURNS trigger AS $$
    DECLARE
      r record;
      v_event uuid := uuid_generate_v7();
      v_at timestamptz := coalesce(NEW.sent_at, now());
    BEGIN
      FOR r IN
        INSERT INTO webhook_deliveries (project_id, endpoint_id, event_id, event_type, event_at, data)
        SELECT w.project_id, w.id, v_event, 'campaign.sent', v_at,
          jsonb_build_object('campaignId', NEW.id, 'name', NEW.name, 'subject', NEW.subject,
                             'totalRecipients', NEW.total_recipients, 'occurredAt', webhook_iso(v_at))
        FROM webhook_endpoints w
        WHERE w.project_id = NEW.project_id AND w.enabled AND 'campaign.sent' = ANY (w.events)
        RETURNING project_id, endpoint_id
      LOOP
        PERFORM webhook_wake(r.project_id, r.endpoint_id);
      END LOOP;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER campaigns_webhook_capture
    AFTER UPDATE OF status ON campaigns
    FOR EACH ROW WHEN (NEW.status = 'SENT' AND OLD.status IS DISTINCT FROM 'SENT')
    EXECUTE FUNCTION webhook_capture_campaign()`.execute(db);

  // workflow.completed (COMPLETED, or EXITED by an EXIT step) and workflow.failed.
  await sql`
    CREATE FUNCTION webhook_capture_workflow() RETURNS trigger AS $$
    DECLARE
      r record;
      v_event uuid := uuid_generate_v7();
      v_type text := CASE WHEN NEW.status = 'FAILED' THEN 'workflow.failed' ELSE 'workflow.completed' END;
      v_at timestamptz := coalesce(NEW.completed_at, now());
    BEGIN
      FOR r IN
        INSERT INTO webhook_deliveries (project_id, endpoint_id, event_id, event_type, event_at, data)
        SELECT w.project_id, w.id, v_event, v_type, v_at,
          jsonb_build_object('workflowId', NEW.workflow_id, 'workflowName', f.name, 'workflowExecutionId', NEW.id,
                             'contact', jsonb_build_object('id', c.id, 'email', c.email),
                             'status', NEW.status, 'exitReason', NEW.exit_reason, 'error', NEW.error,
                             'startedAt', webhook_iso(NEW.started_at), 'occurredAt', webhook_iso(v_at))
        FROM webhook_endpoints w
        LEFT JOIN contacts c ON c.id = NEW.contact_id
        LEFT JOIN workflows f ON f.project_id = NEW.project_id AND f.id = NEW.workflow_id
        WHERE w.project_id = NEW.project_id AND w.enabled AND v_type = ANY (w.events)
        RETURNING project_id, endpoint_id
      LOOP
        PERFORM webhook_wake(r.project_id, r.endpoint_id);
      END LOOP;
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER workflow_executions_webhook_capture
    AFTER UPDATE OF status ON workflow_executions
    FOR EACH ROW WHEN (NEW.status IN ('COMPLETED', 'EXITED', 'FAILED') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION webhook_capture_workflow()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER workflow_executions_webhook_capture ON workflow_executions`.execute(db);
  await sql`DROP TRIGGER campaigns_webhook_capture ON campaigns`.execute(db);
  await sql`DROP TRIGGER events_webhook_capture ON events`.execute(db);
  await sql`DROP FUNCTION webhook_capture_workflow(), webhook_capture_campaign(), webhook_capture_events(), webhook_iso(timestamptz), webhook_wake(uuid, uuid)`.execute(db);
  await sql`DROP TABLE webhook_deliveries, webhook_endpoints`.execute(db);
}

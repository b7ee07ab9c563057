import { type Kysely, sql } from 'kysely';

/**
 * Outgoing webhooks of `email.received` (docs/webhooks-outgoing.md): the capture trigger of
 * migration 0028 builds a received message's payload from the event's own data (what was
 * received, and the email it replies to), not from one of our emails. The other types are as
 * in 0028; `down` restores 0028's function.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION webhook_capture_events() RETURNS trigger AS $$
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
            WHEN e.name = 'email.received' THEN
              -- A received message (docs/bounces.md "Inbound mail"): the event's own fields (subject,
              -- from, to, text…, and emailId/campaignId when it replies to one of ours), not our email's.
              e.data || jsonb_build_object('contact', jsonb_build_object('id', c.id, 'email', c.email),
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
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION webhook_capture_events() RETURNS trigger AS $$
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
}

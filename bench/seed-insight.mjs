// Seeds one big project for the insight benchmarks (bench/activity.mjs, bench/analytics.mjs),
// straight into the database of a running server:
//
//   node bench/seed-insight.mjs [--url postgres://…] [--project <uuid>] [--contacts 1000000]
//        [--events 5000000] [--emails 2000000] [--campaigns 100] [--workflow-runs 100000] [--days 365]
//
// Connection URL: --url, else $DATABASE_URL, else the running server's $DATA_DIR/postgres.url
// (DATA_DIR defaults to /tmp/bench-insight). Run that server with ROLE=api while seeding, so that
// no worker acts on the rows (the SCHEDULED campaigns and waiting steps are due only later).
// Without --project a new project is created and its secret key printed (`project <uuid>` /
// `secret sk_…` lines, for the benchmark scripts to parse).
//
// What it writes (every timestamp within the last --days, reproducible: random() is seeded):
// - contacts: bench/seed-contacts.mjs (10 % unsubscribed, each with a `contact.unsubscribed` event);
// - 10 templates; --campaigns campaigns: 90 % SENT at spread times, 5 % SCHEDULED in the next 30
//   days, the rest DRAFT (none SENDING: a worker would resume it and mail the whole audience);
// - --emails emails: 75 % campaign mail (an even share per SENT campaign, delivered over the hour
//   after its send, one per contact and campaign), 25 % /v1/send mail at random times. Milestones:
//   all sent, 96 % delivered, 2 % bounced, 35 % of the delivered opened within two days (20 % of
//   those clicked), 0.1 % complained; open/click counters above 1 for some;
// - the email lifecycle events of those emails (email.sent, email.delivery, email.open, email.click,
//   email.bounce, email.complaint, data {emailId[, url]}), like the delivery pipeline records them;
// - --events tracked events over 30 names with a skewed distribution (a few are rare);
// - 3 disabled workflows (TRIGGER → DELAY → SEND_EMAIL) with --workflow-runs executions: 85 %
//   COMPLETED, 5 % FAILED, 10 % WAITING on the DELAY step, due within the next 30 days.
// Every row goes through the tables' triggers (rollups included), in chunks of 250,000 rows, then
// VACUUM (ANALYZE) so the planner has statistics and index-only scans have a visibility map.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import console from 'node:console';
import pg from 'pg';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const dataDir = process.env.DATA_DIR ?? '/tmp/bench-insight';
const url = arg('url', process.env.DATABASE_URL) ?? readFileSync(path.join(dataDir, 'postgres.url'), 'utf8').trim();
const contacts = Number(arg('contacts', '1000000'));
const eventCount = Number(arg('events', '5000000'));
const emailCount = Number(arg('emails', '2000000'));
const campaignCount = Number(arg('campaigns', '100'));
const workflowRuns = Number(arg('workflow-runs', '100000'));
const days = Number(arg('days', '365'));
const CHUNK = 250_000;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const key = (prefix) => prefix + Array.from({ length: 40 }, () => BASE62[randomInt(62)]).join('');
const EVENT_NAMES = [
  'page_viewed', 'button_clicked', 'session_started', 'item_viewed', 'search_performed', 'cart_updated',
  'signed_in', 'feature_used', 'file_uploaded', 'comment_posted', 'invite_sent', 'report_exported',
  'checkout_started', 'purchase_completed', 'subscription_renewed', 'plan_upgraded', 'profile_updated',
  'password_changed', 'integration_connected', 'api_key_created', 'webhook_configured', 'trial_started',
  'trial_ended', 'survey_answered', 'referral_sent', 'account_deleted', 'plan_downgraded', 'refund_requested',
  'sso_enabled', 'audit_requested',
];

const client = new pg.Client({ connectionString: url, application_name: 'seed-insight' });
await client.connect();
const started = Date.now();
async function step(label, text, values) {
  const t0 = Date.now();
  const res = await client.query(text, values);
  console.log(`${label}: ${res.rowCount?.toLocaleString('en') ?? '-'} rows (${Date.now() - t0} ms)`);
  return res;
}
/** Runs `text` for [from, to] ranges of 1..total in chunks ($2 = from, $3 = to; $1 = project). */
async function chunked(label, total, text, extra = []) {
  for (let from = 1; from <= total; from += CHUNK) {
    const to = Math.min(total, from + CHUNK - 1);
    await step(`${label} ${to.toLocaleString('en')}/${total.toLocaleString('en')}`, text, [projectId, from, to, ...extra]);
  }
}

let projectId = arg('project', undefined);
try {
  if (!projectId) {
    const secret = key('sk_');
    const { rows } = await client.query(
      'INSERT INTO projects (name, public_key, secret_key) VALUES ($1, $2, $3) RETURNING id',
      ['bench insight', key('pk_'), secret],
    );
    projectId = rows[0].id;
    console.log(`project ${projectId}\nsecret  ${secret}`);
  }

  const seeded = spawnSync(process.execPath, ['bench/seed-contacts.mjs', '--url', url, '--project', projectId, '--count', String(contacts)], { stdio: 'inherit' });
  if (seeded.status !== 0) throw new Error('seed-contacts failed');
  await client.query('SELECT setseed(0.17)');

  // Row numbers for the contacts, so that set-based inserts can pick one by number.
  await step('numbered contacts', `
    CREATE TEMP TABLE seed_contacts AS
    SELECT row_number() OVER (ORDER BY id)::int AS rn, id, email, subscribed FROM contacts WHERE project_id = $1`, [projectId]);
  await client.query('CREATE UNIQUE INDEX ON seed_contacts (rn)');
  await client.query('ANALYZE seed_contacts');
  const n = (await client.query('SELECT count(*)::int AS n FROM seed_contacts')).rows[0].n;

  await step('contact.unsubscribed events', `
    INSERT INTO events (project_id, contact_id, name, data, created_at)
    SELECT $1, id, 'contact.unsubscribed', '{}', now() - random() * make_interval(days => $2)
    FROM seed_contacts WHERE NOT subscribed`, [projectId, days]);

  await step('templates', `
    INSERT INTO templates (project_id, name, subject, body, from_email, type)
    SELECT $1, 'Template ' || g, 'Subject of template ' || g, '<p>Hello {{email}}</p>', 'news@bench.example',
           CASE WHEN g <= 3 THEN 'TRANSACTIONAL' ELSE 'MARKETING' END
    FROM generate_series(1, 10) g`, [projectId]);

  // Campaign k (1-based): the first 90 % SENT at spread times, then SCHEDULED, then DRAFT.
  const sentCampaigns = Math.max(1, Math.floor(campaignCount * 0.9));
  const scheduled = Math.max(1, Math.floor(campaignCount * 0.05));
  await step('campaigns', `
    INSERT INTO campaigns (project_id, name, subject, body, from_email, status, scheduled_for, sent_at, total_recipients, created_at, updated_at)
    SELECT $1, 'Campaign ' || g, 'News #' || g, '<p>Issue ' || g || '</p>', 'news@bench.example',
      CASE WHEN g <= $2 THEN 'SENT' WHEN g <= $2 + $3 THEN 'SCHEDULED' ELSE 'DRAFT' END,
      CASE WHEN g > $2 AND g <= $2 + $3 THEN now() + (g - $2) * interval '1 day' * 30 / $3 END,
      CASE WHEN g <= $2 THEN now() - make_interval(days => $5) * ($2 - g + 1) / ($2 + 1) END,
      0,
      now() - make_interval(days => $5) * ($2 - g + 2) / ($2 + 2),
      now()
    FROM generate_series(1, $4) g`, [projectId, sentCampaigns, scheduled, campaignCount, days]);
  await client.query(`
    CREATE TEMP TABLE seed_campaigns AS
    SELECT (row_number() OVER (ORDER BY sent_at) - 1)::int AS k, id, sent_at FROM campaigns WHERE project_id = $1 AND status = 'SENT'`, [projectId]);

  const campaignEmails = Math.floor(emailCount * 0.75);
  // Email i: campaign mail while i <= campaignEmails (campaign (i-1) % C, its k-th recipient k = (i-1) / C,
  // the contact number (k * 7919 + campaign * 104729) % n + 1: distinct within a campaign while k < n).
  await chunked('emails', emailCount, `
    INSERT INTO emails (project_id, contact_id, source, type, campaign_id, template_id, to_email, from_email, subject, html,
      status, message_id, sent_at, delivered_at, opened_at, clicked_at, bounced_at, complained_at, open_count, click_count,
      created_at, updated_at)
    SELECT $1, c.id, v.source, v.type, v.campaign_id, NULL, c.email, 'news@bench.example', v.subject, '<p>Hi</p>',
      CASE WHEN v.complained THEN 'COMPLAINED' WHEN v.bounced THEN 'BOUNCED' WHEN v.clicked THEN 'CLICKED'
           WHEN v.opened THEN 'OPENED' WHEN v.delivered THEN 'DELIVERED' ELSE 'SENT' END,
      gen_random_uuid() || '@bench.example',
      v.at + interval '1 second',
      CASE WHEN v.delivered THEN v.at + interval '3 seconds' END,
      CASE WHEN v.opened THEN least(now(), v.at + v.open_after) END,
      CASE WHEN v.clicked THEN least(now(), v.at + v.open_after + interval '20 seconds') END,
      CASE WHEN v.bounced THEN v.at + interval '4 seconds' END,
      CASE WHEN v.complained THEN least(now(), v.at + v.open_after + interval '1 minute') END,
      CASE WHEN v.opened THEN 1 + floor(power(random(), 4) * 6)::int ELSE 0 END,
      CASE WHEN v.clicked THEN 1 + floor(power(random(), 4) * 3)::int ELSE 0 END,
      v.at, v.at
    FROM (
      SELECT g.i, r.r1,
        CASE WHEN g.i <= $4 THEN 'CAMPAIGN' ELSE 'SEND' END AS source,
        CASE WHEN g.i <= $4 THEN 'MARKETING' ELSE 'TRANSACTIONAL' END AS type,
        sc.id AS campaign_id,
        CASE WHEN g.i <= $4 THEN 'News' ELSE 'Your receipt' END AS subject,
        CASE WHEN g.i <= $4 THEN ((((g.i - 1) / $5) * 7919 + sc.k::bigint * 104729) % $6 + 1)::int
             ELSE 1 + floor(random() * $6)::int END AS rn,
        CASE WHEN g.i <= $4 THEN sc.sent_at + (((g.i - 1) / $5) % 3600) * interval '1 second'
             ELSE now() - random() * make_interval(days => $7) END AS at,
        r.r1 < 0.96 AS delivered,
        r.r1 >= 0.96 AND r.r1 < 0.98 AS bounced,
        r.r1 < 0.96 AND r.r2 < 0.35 AS opened,
        r.r1 < 0.96 AND r.r2 < 0.07 AS clicked,
        r.r1 < 0.96 AND r.r2 < 0.001 AS complained,
        random() * interval '48 hours' AS open_after
      FROM generate_series($2::int, $3::int) g(i)
      CROSS JOIN LATERAL (SELECT random() + g.i * 0 AS r1, random() + g.i * 0 AS r2) r
      LEFT JOIN seed_campaigns sc ON g.i <= $4 AND sc.k = (g.i - 1) % $5
    ) v
    JOIN seed_contacts c ON c.rn = v.rn`, [campaignEmails, sentCampaigns, n, days]);
  await step('campaign totals', `
    UPDATE campaigns c SET total_recipients = t.n
    FROM (SELECT campaign_id, count(*)::int AS n FROM emails WHERE project_id = $1 AND campaign_id IS NOT NULL GROUP BY 1) t
    WHERE c.id = t.campaign_id`, [projectId]);

  // The lifecycle events, one milestone per statement and in id ranges, as delivery records them.
  const milestones = [
    ['email.sent', 'sent_at', `jsonb_build_object('emailId', e.id)`],
    ['email.delivery', 'delivered_at', `jsonb_build_object('emailId', e.id)`],
    ['email.open', 'opened_at', `jsonb_build_object('emailId', e.id)`],
    ['email.click', 'clicked_at', `jsonb_build_object('emailId', e.id, 'url', 'https://bench.example/offer/' || (abs(hashtext(e.id::text)) % 20))`],
    ['email.bounce', 'bounced_at', `jsonb_build_object('emailId', e.id, 'bounceType', 'Permanent')`],
    ['email.complaint', 'complained_at', `jsonb_build_object('emailId', e.id)`],
  ];
  await client.query(`CREATE TEMP TABLE seed_emails AS SELECT row_number() OVER (ORDER BY id)::int AS rn, id FROM emails WHERE project_id = $1`, [projectId]);
  await client.query('CREATE UNIQUE INDEX ON seed_emails (rn)');
  const emailRows = (await client.query('SELECT count(*)::int AS n FROM seed_emails')).rows[0].n;
  for (const [name, column, data] of milestones) {
    await chunked(name, emailRows, `
      INSERT INTO events (project_id, contact_id, name, data, created_at)
      SELECT e.project_id, e.contact_id, '${name}', ${data}, e.${column}
      FROM seed_emails s JOIN emails e ON e.id = s.id
      WHERE $1::uuid IS NOT NULL AND s.rn BETWEEN $2 AND $3 AND e.${column} IS NOT NULL AND e.contact_id IS NOT NULL`);
  }

  // Tracked events: name number floor(30 * u^2.5) puts most of them on the first few names.
  await chunked('tracked events', eventCount, `
    INSERT INTO events (project_id, contact_id, name, data, created_at)
    SELECT $1, c.id, ($4::text[])[1 + floor(power(r.u, 2.5) * cardinality($4::text[]))::int],
           jsonb_build_object('path', '/p/' || (g.i % 500), 'value', g.i % 1000),
           now() - random() * make_interval(days => $5)
    FROM generate_series($2::int, $3::int) g(i)
    CROSS JOIN LATERAL (SELECT random() + g.i * 0 AS u, 1 + floor(random() * $6)::int AS rn) r
    JOIN seed_contacts c ON c.rn = r.rn`, [EVENT_NAMES, days, n]);

  // Workflows: disabled (nothing enrols during the benchmark), TRIGGER → DELAY → SEND_EMAIL.
  await step('workflows', `
    INSERT INTO workflows (project_id, name, trigger_config, enabled, created_at)
    SELECT $1, 'Workflow ' || g, jsonb_build_object('eventName', 'signed_in'), false, now() - make_interval(days => $2)
    FROM generate_series(1, 3) g`, [projectId, days]);
  await step('workflow steps', `
    INSERT INTO workflow_steps (project_id, workflow_id, type, name, config, template_id, position_y)
    SELECT w.project_id, w.id, s.type, s.name, s.config, CASE WHEN s.type = 'SEND_EMAIL' THEN t.id END, s.y
    FROM workflows w
    CROSS JOIN (VALUES ('TRIGGER', 'Trigger', '{}'::jsonb, 0), ('DELAY', 'Wait a while', '{"amount": 3, "unit": "days"}', 100),
                       ('SEND_EMAIL', 'Follow-up', '{}', 200)) s(type, name, config, y)
    CROSS JOIN LATERAL (SELECT id FROM templates WHERE project_id = w.project_id ORDER BY created_at LIMIT 1) t
    WHERE w.project_id = $1`, [projectId]);
  await step('send-email step configs', `
    UPDATE workflow_steps SET config = jsonb_build_object('templateId', template_id)
    WHERE project_id = $1 AND type = 'SEND_EMAIL'`, [projectId]);
  // Run j: workflow j % 3, contact (j * 7919 + w * 104729) % n + 1 (distinct per workflow while j / 3 < n).
  await step('workflow executions', `
    INSERT INTO workflow_executions (project_id, workflow_id, contact_id, status, current_step_id, started_at, completed_at, error, updated_at)
    SELECT $1, w.id, c.id, v.status, CASE WHEN v.status = 'WAITING' THEN d.id END, v.at,
           CASE WHEN v.status IN ('COMPLETED', 'FAILED') THEN v.at + interval '3 days' END,
           CASE WHEN v.status = 'FAILED' THEN 'Template rendering failed' END, v.at
    FROM (
      SELECT g.j, (g.j % 3)::int AS wk,
        CASE WHEN r.u < 0.85 THEN 'COMPLETED' WHEN r.u < 0.90 THEN 'FAILED' ELSE 'WAITING' END AS status,
        CASE WHEN r.u < 0.90 THEN now() - interval '3 days' - random() * make_interval(days => $3 - 3)
             ELSE now() - random() * interval '3 days' END AS at,
        ((g.j / 3) * 7919 + (g.j % 3) * 104729) % $4 + 1 AS rn
      FROM generate_series(0, $2 - 1) g(j)
      CROSS JOIN LATERAL (SELECT random() + g.j * 0 AS u) r
    ) v
    JOIN (SELECT id, (row_number() OVER (ORDER BY created_at, id) - 1)::int AS wk FROM workflows WHERE project_id = $1) w ON w.wk = v.wk
    JOIN workflow_steps d ON d.project_id = $1 AND d.workflow_id = w.id AND d.type = 'DELAY'
    JOIN seed_contacts c ON c.rn = v.rn`, [projectId, workflowRuns, days, n]);
  await step('waiting delay steps', `
    INSERT INTO workflow_step_executions (project_id, execution_id, workflow_id, step_id, status, due_at, started_at, created_at)
    SELECT x.project_id, x.id, x.workflow_id, x.current_step_id, 'WAITING', x.started_at + interval '3 days' + random() * interval '27 days',
           x.started_at, x.started_at
    FROM workflow_executions x WHERE x.project_id = $1 AND x.status = 'WAITING'`, [projectId]);

  for (const table of ['contacts', 'events', 'emails', 'campaigns', 'templates', 'workflows', 'workflow_steps', 'workflow_executions', 'workflow_step_executions']) {
    const t0 = Date.now();
    await client.query(`VACUUM (ANALYZE) ${table}`);
    console.log(`vacuum analyze ${table} ${Date.now() - t0} ms`);
  }
  const { rows: [counts] } = await client.query(`
    SELECT (SELECT count(*) FROM contacts WHERE project_id = $1)::int AS contacts,
           (SELECT count(*) FROM events WHERE project_id = $1)::int AS events,
           (SELECT count(*) FROM emails WHERE project_id = $1)::int AS emails,
           (SELECT count(*) FROM workflow_executions WHERE project_id = $1)::int AS executions`, [projectId]);
  console.log(`project ${projectId}: ${JSON.stringify(counts)}; total ${Math.round((Date.now() - started) / 1000)} s`);
} finally {
  await client.end();
}

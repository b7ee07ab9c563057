// Seeds one project with ONE big SENT campaign for bench/campaign-insight.mjs (the campaign page's
// insight reads), straight into the database of a running server:
//
//   node bench/seed-campaign.mjs [--url postgres://…] [--emails 1000000] [--days 10] [--chunk 5000]
//
// Connection URL: --url, else $DATABASE_URL, else the running server's $DATA_DIR/postgres.url
// (DATA_DIR defaults to /tmp/bench-campaign). Run that server with ROLE=api while seeding. A new
// project is created and its secret key printed (`project <uuid>` / `secret sk_…` / `campaign
// <uuid>` lines, for the benchmark script to parse).
//
// What it writes (reproducible: random() is seeded):
// - --emails contacts (bench/seed-contacts.mjs) and one campaign that started --days ago, sent to
//   all of them over its first two hours: one email each, through the emails triggers (the
//   rollups of migrations 0029 and 0031 are written by the write path's statement trigger, in
//   chunks of --chunk rows, default 5,000). Milestones: 96 % delivered (3 s after sending), 2 % hard bounced
//   (status BOUNCED, with their email.bounce event at bounced_at carrying SES's bounceType,
//   bounceSubType and diagnosticCode, as the notification route records it), 35 % of the
//   delivered opened within --days (skewed to the first hours; 1 in 10 of those opens only a
//   machine's), 7 % clicked, 0.1 % complained (their email.complaint event);
// - the links: each clicking email clicked 1–3 of 12 URLs (skewed), 1–4 times each, as
//   `email_link_clicks` rows, and `campaign_link_counts` as the click route would have left it,
//   spread over the 8 writer shards (uncompacted: the read sums them).
// Then VACUUM (ANALYZE).
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

const dataDir = process.env.DATA_DIR ?? '/tmp/bench-campaign';
const url = arg('url', process.env.DATABASE_URL) ?? readFileSync(path.join(dataDir, 'postgres.url'), 'utf8').trim();
const emailCount = Number(arg('emails', '1000000'));
const days = Number(arg('days', '10'));
// Emails per INSERT (one transaction each). Small on purpose: a campaign's emails fall in a few
// buckets, and a transaction that bumps one counter row thousands of times (project_email_stats'
// row trigger, migration 0025) walks an ever longer chain of its own row versions: 250,000 rows in
// one statement took 11 minutes, 5,000 take about a second.
const CHUNK = Number(arg('chunk', '5000'));

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const key = (prefix) => prefix + Array.from({ length: 40 }, () => BASE62[randomInt(62)]).join('');

const client = new pg.Client({ connectionString: url, application_name: 'seed-campaign' });
await client.connect();
const started = Date.now();
async function step(label, text, values) {
  const t0 = Date.now();
  const res = await client.query(text, values);
  console.log(`${label}: ${res.rowCount?.toLocaleString('en') ?? '-'} rows (${Date.now() - t0} ms)`);
  return res;
}

try {
  const secret = key('sk_');
  const { rows } = await client.query('INSERT INTO projects (name, public_key, secret_key) VALUES ($1, $2, $3) RETURNING id', ['bench campaign', key('pk_'), secret]);
  const projectId = rows[0].id;
  console.log(`project ${projectId}\nsecret  ${secret}`);
  const seeded = spawnSync(process.execPath, ['bench/seed-contacts.mjs', '--url', url, '--project', projectId, '--count', String(emailCount)], { stdio: 'inherit' });
  if (seeded.status !== 0) throw new Error('seed-contacts failed');
  await client.query('SELECT setseed(0.31)');

  const { rows: [campaign] } = await client.query(
    `INSERT INTO campaigns (project_id, name, subject, body, from_email, status, started_at, sent_at, total_recipients, created_at, updated_at)
     VALUES ($1, 'Big campaign', 'Big news', '<p>Hello</p>', 'news@bench.example', 'SENT',
             now() - make_interval(days => $2), now() - make_interval(days => $2) + interval '2 hours', $3,
             now() - make_interval(days => $2 + 1), now())
     RETURNING id, started_at`,
    [projectId, days, emailCount],
  );
  console.log(`campaign ${campaign.id}`);

  await step('numbered contacts', `
    CREATE TEMP TABLE seed_contacts AS
    SELECT row_number() OVER (ORDER BY id)::int AS rn, id, email FROM contacts WHERE project_id = $1`, [projectId]);
  await client.query('CREATE UNIQUE INDEX ON seed_contacts (rn)');
  await client.query('ANALYZE seed_contacts');

  let inserted = 0;
  const t0 = Date.now();
  for (let from = 1; from <= emailCount; from += CHUNK) {
    const to = Math.min(emailCount, from + CHUNK - 1);
    const res = await client.query(`
      INSERT INTO emails (project_id, contact_id, source, type, campaign_id, to_email, from_email, subject, html, status, message_id,
        sent_at, delivered_at, opened_at, human_opened_at, clicked_at, bounced_at, complained_at, open_count, machine_open_count,
        click_count, created_at, updated_at)
      SELECT $1, c.id, 'CAMPAIGN', 'MARKETING', $2, c.email, 'news@bench.example', 'Big news', '<p>Hi</p>',
        CASE WHEN v.complained THEN 'COMPLAINED' WHEN v.bounced THEN 'BOUNCED' WHEN v.clicked THEN 'CLICKED'
             WHEN v.opened THEN 'OPENED' WHEN v.delivered THEN 'DELIVERED' ELSE 'SENT' END,
        gen_random_uuid() || '@bench.example',
        v.at,
        CASE WHEN v.delivered THEN v.at + interval '3 seconds' END,
        CASE WHEN v.opened THEN least(now(), v.at + v.open_after) END,
        CASE WHEN v.opened AND NOT v.machine_only THEN least(now(), v.at + v.open_after) END,
        CASE WHEN v.clicked THEN least(now(), v.at + v.open_after + interval '20 seconds') END,
        CASE WHEN v.bounced THEN v.at + interval '4 seconds' END,
        CASE WHEN v.complained THEN least(now(), v.at + v.open_after + interval '1 minute') END,
        CASE WHEN v.opened THEN 1 + floor(power(random(), 4) * 6)::int ELSE 0 END,
        CASE WHEN v.machine_only THEN 1 ELSE 0 END,
        CASE WHEN v.clicked THEN 1 + floor(power(random(), 4) * 3)::int ELSE 0 END,
        v.at, v.at
      FROM (
        SELECT g.i,
          $3::timestamptz + (g.i::float8 / $4) * interval '2 hours' AS at,
          r.r1 < 0.96 AS delivered,
          r.r1 >= 0.96 AND r.r1 < 0.98 AS bounced,
          r.r1 < 0.96 AND r.r2 < 0.35 AS opened,
          r.r1 < 0.96 AND r.r2 < 0.035 AND r.r3 < 0.1 AS machine_only,
          r.r1 < 0.96 AND r.r2 < 0.07 AND NOT (r.r2 < 0.035 AND r.r3 < 0.1) AS clicked,
          r.r1 < 0.96 AND r.r2 < 0.001 AND r.r3 >= 0.1 AS complained,
          power(random(), 3) * make_interval(days => $5) AS open_after
        FROM generate_series($6::int, $7::int) g(i)
        CROSS JOIN LATERAL (SELECT random() + g.i * 0 AS r1, random() + g.i * 0 AS r2, random() + g.i * 0 AS r3) r
      ) v
      JOIN seed_contacts c ON c.rn = v.i`, [projectId, campaign.id, campaign.started_at, emailCount, days, from, to]);
    inserted += res.rowCount ?? 0;
    if (to % 100_000 < CHUNK || to === emailCount) console.log(`emails ${inserted.toLocaleString('en')}/${emailCount.toLocaleString('en')} (${Math.round((Date.now() - t0) / 1000)} s)`);
  }

  await step('email.bounce events', `
    INSERT INTO events (project_id, contact_id, name, data, created_at)
    SELECT project_id, contact_id, 'email.bounce',
           jsonb_build_object('emailId', id, 'bounceType', 'Permanent', 'bounceSubType', CASE WHEN random() < 0.8 THEN 'General' ELSE 'NoEmail' END,
                              'diagnosticCode', 'smtp; 550 5.1.1 user unknown', 'feedbackId', 'fb-' || id),
           bounced_at
    FROM emails WHERE campaign_id = $1 AND bounced_at IS NOT NULL`, [campaign.id]);
  await step('email.complaint events', `
    INSERT INTO events (project_id, contact_id, name, data, created_at)
    SELECT project_id, contact_id, 'email.complaint', jsonb_build_object('emailId', id, 'complaintFeedbackType', 'abuse'), complained_at
    FROM emails WHERE campaign_id = $1 AND complained_at IS NOT NULL`, [campaign.id]);

  await step('email_link_clicks', `
    INSERT INTO email_link_clicks (project_id, email_id, url_key, url, clicks, first_clicked_at, last_clicked_at)
    SELECT e.project_id, e.id, md5(u.url)::uuid, u.url, 1 + floor(power(random(), 4) * 4)::int, e.clicked_at, e.clicked_at
    FROM emails e
    CROSS JOIN LATERAL (
      SELECT DISTINCT 'https://shop.example/products/' || floor(power(random(), 2) * 12)::int || '?utm_source=newsletter' AS url
      FROM generate_series(1, 1 + floor(random() * 3)::int) WHERE e.id IS NOT NULL
    ) u
    WHERE e.campaign_id = $1 AND e.clicked_at IS NOT NULL`, [campaign.id]);
  await step('campaign_link_counts', `
    INSERT INTO campaign_link_counts (project_id, campaign_id, url_key, shard, url, clicks, unique_clicks)
    SELECT $1, $2, url_key, (hashtext(email_id::text) & 7)::smallint, min(url), sum(clicks), count(*)
    FROM email_link_clicks WHERE project_id = $1
    GROUP BY url_key, (hashtext(email_id::text) & 7)`, [projectId, campaign.id]);

  for (const table of ['emails', 'events', 'contacts', 'email_link_clicks', 'campaign_link_counts', 'campaign_email_counts', 'analytics_campaign_counts']) {
    await step(`vacuum ${table}`, `VACUUM (ANALYZE) ${table}`);
  }
  const { rows: [t] } = await client.query(`
    SELECT count(*)::int AS emails, count(delivered_at)::int AS delivered, count(bounced_at)::int AS bounced, count(clicked_at)::int AS clicked
    FROM emails WHERE campaign_id = $1`, [campaign.id]);
  console.log(`seeded ${JSON.stringify(t)} in ${Math.round((Date.now() - started) / 1000)} s`);
} finally {
  await client.end();
}

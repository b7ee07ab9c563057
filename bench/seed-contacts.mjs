// Seeds one project with many contacts for bench/contacts-list.mjs, straight into the database.
//
//   node bench/seed-contacts.mjs [--url postgres://…] [--count 1000000] [--chunk 100000] [--project <uuid>]
//
// Connection URL: --url, else $DATABASE_URL, else the running server's $DATA_DIR/postgres.url
// (DATA_DIR defaults to /tmp/bench-contacts). Without --project a new project is created and its
// secret key printed. Set-based: one INSERT … SELECT FROM generate_series per chunk, then
// VACUUM (ANALYZE) so the planner has statistics and index-only scans have a visibility map.
// random() is seeded, so a run is reproducible.
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

const dataDir = process.env.DATA_DIR ?? '/tmp/bench-contacts';
const url = arg('url', process.env.DATABASE_URL) ?? readFileSync(path.join(dataDir, 'postgres.url'), 'utf8').trim();
const count = Number(arg('count', '1000000'));
const chunk = Number(arg('chunk', '100000'));

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const key = (prefix) => prefix + Array.from({ length: 40 }, () => BASE62[randomInt(62)]).join('');

const FIRST = ['ada', 'alan', 'grace', 'linus', 'margaret', 'dennis', 'barbara', 'ken', 'frances', 'edsger', 'radia', 'donald',
  'sophie', 'tim', 'hedy', 'john', 'katherine', 'guido', 'anita', 'james', 'lisa', 'bjarne', 'joan', 'niklaus', 'mary',
  'yukihiro', 'shafi', 'leslie', 'carol', 'vint', 'jean', 'robert', 'susan', 'brian', 'elena', 'marco', 'chen', 'priya',
  'omar', 'fatima', 'lucas', 'emma', 'noah', 'olivia', 'liam', 'mia', 'ivan', 'sara', 'kofi', 'amara'];
const LAST = ['lovelace', 'turing', 'hopper', 'torvalds', 'hamilton', 'ritchie', 'liskov', 'thompson', 'allen', 'dijkstra',
  'perlman', 'knuth', 'wilson', 'berners', 'lamarr', 'mccarthy', 'johnson', 'rossum', 'borg', 'gosling', 'su', 'stroustrup',
  'clarke', 'wirth', 'keller', 'matsumoto', 'goldwasser', 'lamport', 'shaw', 'cerf', 'sammet', 'kahn', 'kare', 'kernighan',
  'smith', 'garcia', 'wang', 'patel', 'haddad', 'khan', 'silva', 'muller', 'kim', 'nguyen', 'rossi', 'novak', 'petrov',
  'mensah', 'okafor', 'larsen'];
// 100 slots: a slot's share of the addresses is 1 %. '*' is a company domain (one of 5,000).
const DOMAINS = [
  ...Array(25).fill('gmail.com'), ...Array(8).fill('yahoo.com'), ...Array(7).fill('hotmail.com'), ...Array(6).fill('outlook.com'),
  ...Array(4).fill('icloud.com'), ...Array(2).fill('gmx.de'), ...Array(2).fill('web.de'), 'proton.me', 'aol.com', 'mail.ru',
  'yandex.ru', ...Array(42).fill('*'),
];

const client = new pg.Client({ connectionString: url, application_name: 'seed-contacts' });
await client.connect();
try {
  let projectId = arg('project', undefined);
  if (!projectId) {
    const secret = key('sk_');
    const { rows } = await client.query(
      'INSERT INTO projects (name, public_key, secret_key) VALUES ($1, $2, $3) RETURNING id',
      [`bench ${count} contacts`, key('pk_'), secret],
    );
    projectId = rows[0].id;
    console.log(`project ${projectId}\nsecret  ${secret}`);
  }
  await client.query('SELECT setseed(0.42)');
  const started = Date.now();
  for (let from = 1; from <= count; from += chunk) {
    const to = Math.min(count, from + chunk - 1);
    const t0 = Date.now();
    await client.query(
      `INSERT INTO contacts (project_id, email, subscribed, data, created_at, updated_at)
       SELECT $1, lower(v.email), v.subscribed, v.data, v.created_at, v.created_at
       FROM (
         SELECT
           ($4::text[])[1 + floor(random() * cardinality($4::text[]))::int] || '.' ||
           ($5::text[])[1 + floor(random() * cardinality($5::text[]))::int] || g.i || '@' ||
           CASE WHEN d.domain = '*' THEN 'company' || floor(random() * 5000)::int || '.com' ELSE d.domain END AS email,
           random() < 0.9 AS subscribed,
           jsonb_build_object(
             'plan', (ARRAY['free', 'free', 'free', 'starter', 'pro', 'enterprise'])[1 + floor(random() * 6)::int],
             'country', (ARRAY['US', 'GB', 'DE', 'FR', 'IN', 'BR', 'JP', 'NG', 'CA', 'ES'])[1 + floor(random() * 10)::int],
             'signupSource', (ARRAY['web', 'import', 'api', 'referral'])[1 + floor(random() * 4)::int],
             'age', 18 + floor(random() * 60)::int,
             'vip', random() < 0.05
           ) AS data,
           now() - random() * interval '1095 days' AS created_at
         FROM generate_series($2::int, $3::int) AS g(i)
         CROSS JOIN LATERAL (SELECT ($6::text[])[1 + floor(random() * 100 + g.i * 0)::int] AS domain) d
       ) v`,
      [projectId, from, to, FIRST, LAST, DOMAINS],
    );
    console.log(`inserted ${to.toLocaleString('en')} (${Date.now() - t0} ms)`);
  }
  const t0 = Date.now();
  await client.query('VACUUM (ANALYZE) contacts');
  console.log(`vacuum analyze ${Date.now() - t0} ms; total ${Math.round((Date.now() - started) / 1000)} s`);
  const { rows } = await client.query('SELECT count(*)::int AS n FROM contacts WHERE project_id = $1', [projectId]);
  console.log(`project ${projectId} has ${rows[0].n.toLocaleString('en')} contacts`);
} finally {
  await client.end();
}

// The write cost of migration 0031 (the campaign insight) on the hot paths of a campaign email:
// a delivery notification, a first open, a click. Timed with and without it, alternated.
//
//   node bench/campaign-insight-cost.mjs --url postgres://… [--rounds 4] [--emails 2000]
//
// In a new project of the database at --url (a server's DATA_DIR/postgres.url; run it while
// nothing else writes there): one campaign; per round `--emails` new SENT campaign emails
// (inserted before the clock starts), then one autocommitted statement per email for each step,
// as the routes write them: the delivery (delivered_at, status), the first open by a person
// (opened_at, human_opened_at, open_count, status), and the click (a transaction: the row locked,
// clicked_at, click_count, status, then — with 0031 — the click route's call of
// campaign_link_click, as src/modules/tracking/tracking.repo.ts insertLinkClick makes it).
// Rounds alternate with 0031 on (A: its emails trigger enabled, the link function called) and
// off (B: `ALTER TABLE emails DISABLE TRIGGER campaign_emails_update`, no link call), A B B A …;
// the trigger is enabled again at the end. The email.* events each
// step also inserts and the rest of recordMilestone's SQL are the same in both arms and left out,
// so the percentages are of these statements alone (an upper bound of the share of a request).
// Reports wall time, the CPU time of the PostgreSQL backend (/proc: run on the database's
// machine) and the WAL written, per email. Not a test: machine-dependent.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const url = arg('url', process.env.DATABASE_URL);
const rounds = Number(arg('rounds', '4'));
const count = Number(arg('emails', '2000'));
if (!url) {
  console.error('usage: node bench/campaign-insight-cost.mjs --url postgres://…');
  process.exit(2);
}

const client = new pg.Client({ connectionString: url, application_name: 'campaign-insight-cost' });
await client.connect();
const { rows: [project] } = await client.query(
  `INSERT INTO projects (name, public_key, secret_key) VALUES ('insight cost', 'pk_' || md5(random()::text), 'sk_' || md5(random()::text)) RETURNING id`,
);
const { rows: [campaign] } = await client.query(
  `INSERT INTO campaigns (project_id, name, from_email, status, started_at) VALUES ($1, 'cost', 'news@bench.example', 'SENDING', now()) RETURNING id`,
  [project.id],
);

const { rows: [{ pid }] } = await client.query('SELECT pg_backend_pid() AS pid');
function backendCpu() {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}
const walLsn = async () => (await client.query('SELECT pg_current_wal_insert_lsn() AS lsn')).rows[0].lsn;
const walBytes = async (from) => Number((await client.query('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS n', [from])).rows[0].n);

const LINK_CLICK = 'SELECT campaign_link_click($1::uuid, $2::text)';

const STEPS = {
  delivery: async (id) => {
    await client.query(`UPDATE emails SET delivered_at = coalesce(delivered_at, now()), status = 'DELIVERED', unconfirmed = false, updated_at = now() WHERE id = $1`, [id]);
  },
  open: async (id) => {
    await client.query(`UPDATE emails SET opened_at = coalesce(opened_at, now()), human_opened_at = coalesce(human_opened_at, now()),
      open_count = open_count + 1, status = 'OPENED', updated_at = now() WHERE id = $1`, [id]);
  },
  click: async (id, on, i) => {
    await client.query('BEGIN');
    await client.query('SELECT opened_at IS NOT NULL AS opened FROM emails WHERE id = $1 FOR UPDATE', [id]);
    await client.query(`UPDATE emails SET clicked_at = coalesce(clicked_at, now()), click_count = click_count + 1, status = 'CLICKED', updated_at = now() WHERE id = $1`, [id]);
    if (on) await client.query(LINK_CLICK, [id, `https://shop.example/products/${i % 12}?utm_source=newsletter`]);
    await client.query('COMMIT');
  },
};

const results = { on: {}, off: {} };
async function round(on) {
  if (!on) await client.query('ALTER TABLE emails DISABLE TRIGGER campaign_emails_update');
  try {
    const { rows } = await client.query(
      `INSERT INTO emails (project_id, source, type, campaign_id, to_email, from_email, subject, html, status, message_id, sent_at)
       SELECT $1, 'CAMPAIGN', 'MARKETING', $2, 'r' || g || '@bench.example', 'news@bench.example', 'Hi', '<p>Hi</p>', 'SENT',
              gen_random_uuid() || '@cost.example', now()
       FROM generate_series(1, $3) g RETURNING id`,
      [project.id, campaign.id, count],
    );
    const ids = rows.map((r) => r.id);
    for (const [name, run] of Object.entries(STEPS)) {
      const cpu0 = backendCpu();
      const lsn0 = await walLsn();
      const t0 = performance.now();
      for (const [i, id] of ids.entries()) await run(id, on, i);
      const ms = performance.now() - t0;
      const cpu = backendCpu() - cpu0;
      const wal = await walBytes(lsn0);
      const r = (results[on ? 'on' : 'off'][name] ??= { ms: 0, cpu: 0, wal: 0, n: 0 });
      r.ms += ms;
      r.cpu += cpu;
      r.wal += wal;
      r.n += ids.length;
      console.log(`${on ? 'A (0031 on) ' : 'B (0031 off)'} ${name.padEnd(8)} ${(ms * 1000 / ids.length).toFixed(0).padStart(5)} µs wall  ${(cpu * 1e6 / ids.length).toFixed(0).padStart(5)} µs PG CPU  ${(wal / ids.length).toFixed(0).padStart(5)} B WAL per email`);
    }
  } finally {
    if (!on) await client.query('ALTER TABLE emails ENABLE TRIGGER campaign_emails_update');
  }
}

try {
  for (let r = 0; r < rounds; r++) await round(r % 4 === 0 || r % 4 === 3);
  console.log('\nper email, all rounds: on vs off (difference)');
  for (const name of Object.keys(STEPS)) {
    const a = results.on[name];
    const b = results.off[name];
    const per = (x, k, scale) => (x[k] * scale) / x.n;
    const line = (k, scale, unit) => {
      const on = per(a, k, scale);
      const off = per(b, k, scale);
      return `${k} ${on.toFixed(0)} vs ${off.toFixed(0)} ${unit} (${on - off >= 0 ? '+' : ''}${(on - off).toFixed(0)}, ${off > 0 ? `${(((on - off) / off) * 100).toFixed(1)} %` : '-'})`;
    };
    console.log(`${name.padEnd(8)} ${line('ms', 1000, 'µs')}  ${line('cpu', 1e6, 'µs')}  ${line('wal', 1, 'B')}`);
  }
} finally {
  await client.end();
}

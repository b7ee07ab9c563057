// Seeding of bench/scale.mjs: one project's contacts and events, set-based, into a running
// server's database (node-postgres client). The contacts have the shape of bench/segments.mjs
// (same emails, data keys and proportions, so its 3-filter segment selects the same share); the
// events are generated per contact in the statement that inserts the contact (a CTE), so no id
// lookup table is needed at any size.
//
// Speed: the secondary indexes of contacts and events (every index no constraint owns) are
// dropped before the inserts and created again after them from their own definitions
// (pg_get_indexdef), one sorted build each instead of millions of inserts into GIN trees; the
// script checks that the same definitions exist afterwards. Triggers and foreign keys stay on.
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import { CONTACT_ROW_SQL } from './bench-audience.mjs';

const EVENTS = ['page_view', 'login', 'purchase', 'signup', 'add_to_cart', 'search', 'logout', 'share'];

/** The email of seeded contact `i` (0-based), as bench/segments.mjs writes it. */
export const seededEmail = (i) => `user${i}@bench${i % 5000}.example`;

/** The secondary indexes of contacts and events: name and definition. */
async function secondaryIndexes(db) {
  const { rows } = await db.query(`
    SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
    FROM pg_index i
    WHERE i.indrelid IN ('contacts'::regclass, 'events'::regclass)
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
    ORDER BY 1`);
  return rows;
}

/**
 * Seeds `contacts` contacts with on average `eventsPerContact` events each (0 … 2 × the average,
 * uniform) into project `projectId`, in chunks of `chunk` contacts. Returns the seconds of each step.
 */
export async function seedProject(db, { projectId, contacts, eventsPerContact, chunk = 200_000 }) {
  const seconds = {};
  const step = async (name, fn) => {
    const t0 = performance.now();
    await fn();
    seconds[name] = (performance.now() - t0) / 1000;
    console.log(`  seed ${name}: ${seconds[name].toFixed(1)} s`);
  };
  // A session for bulk work: bigger sorts for the index builds, no wait for the WAL flush per chunk.
  await db.query(`SET maintenance_work_mem = '512MB'`);
  await db.query(`SET synchronous_commit = off`);
  await db.query('SELECT setseed(0.42)');
  const indexes = await secondaryIndexes(db);
  await step('drop secondary indexes', async () => {
    for (const ix of indexes) await db.query(`DROP INDEX ${ix.name}`);
  });
  try {
    await step('contacts + events', async () => {
      for (let from = 0; from < contacts; from += chunk) {
        const to = Math.min(contacts, from + chunk) - 1;
        const t0 = performance.now();
        // Contacts: bench/segments.mjs's rows. Events: per contact 0 … 2E, names weighted towards
        // page_view, times spread over the last 180 days (the lateral call references the row, so
        // its count is drawn again for every contact).
        const { rows: [{ n }] } = await db.query(`
          WITH c AS (
            INSERT INTO contacts (project_id, email, subscribed, data, created_at, updated_at)
            ${CONTACT_ROW_SQL}
            FROM generate_series($2::int, $3::int) AS i
            RETURNING id
          ), e AS (
            INSERT INTO events (project_id, contact_id, name, created_at)
            SELECT $1, c.id, ($4::text[])[1 + floor(power(random(), 2) * 8)::int], now() - random() * interval '180 days'
            FROM c CROSS JOIN LATERAL generate_series(1, floor(random() * (2 * $5::float8 + 1) + 0 * length(c.id::text))::int) AS k
            RETURNING 1
          )
          SELECT count(*)::int AS n FROM e`, [projectId, from, to, EVENTS, eventsPerContact]);
        console.log(`    ${(to + 1).toLocaleString('en')} contacts, +${n.toLocaleString('en')} events (${Math.round(performance.now() - t0)} ms)`);
      }
    });
  } finally {
    await step('create secondary indexes', async () => {
      for (const ix of indexes) {
        const t0 = performance.now();
        await db.query(ix.def);
        console.log(`    ${ix.name} ${Math.round(performance.now() - t0)} ms`);
      }
    });
  }
  const after = await secondaryIndexes(db);
  if (JSON.stringify(after) !== JSON.stringify(indexes)) throw new Error(`indexes differ after seeding:\n${JSON.stringify(indexes)}\n${JSON.stringify(after)}`);
  await step('vacuum analyze', () => db.query('VACUUM (ANALYZE) contacts, events'));
  await db.query('RESET maintenance_work_mem; RESET synchronous_commit');
  return seconds;
}

import pg from 'pg';
import { it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { findEmailsForDelivery } from '../../src/modules/emails/emails.repo.js';
import { createOwnDatabase } from '../helpers/database.js';

it('explain', async () => {
  const own = await createOwnDatabase('explainscratch');
  const db = connect(own.url, { max: 2 });
  await migrateToLatest(db.db, db.pool);
  const c = new pg.Client({ connectionString: own.url });
  await c.connect();
  const q = async (s: string, p: unknown[] = []) => (await c.query(s, p)).rows;
  const [p] = await q(`INSERT INTO projects (name, public_key, secret_key) VALUES ('x', 'pk_x', 'sk_x') RETURNING id`);
  await q(`INSERT INTO contacts (project_id, email, subscribed) SELECT $1, 'u' || i || '@x.example', true FROM generate_series(1, 100000) i`, [p.id]);
  const [camp] = await q(`INSERT INTO campaigns (project_id, name, subject, body, from_email, audience_type, status) VALUES ($1, 'c', 's', 'b', 'a@x.example', 'ALL', 'SENDING') RETURNING id`, [p.id]);
  await q(`INSERT INTO emails (id, project_id, contact_id, source, type, campaign_id, to_email, from_email, subject, html, message_id, status)
    SELECT uuid_generate_v7(), $1, c.id, 'CAMPAIGN', 'MARKETING', $2, c.email, 'a@x.example', 's', 'b', '<' || c.id || '@x>', 'PENDING' FROM contacts c`, [p.id, camp.id]);
  if (process.env.ZZ_ANALYZE) await q('ANALYZE');
  const ids = (await q(`SELECT id FROM emails ORDER BY id OFFSET 5000 LIMIT 18`)).map((r) => r.id);
  let captured: { sql: string; parameters: readonly unknown[] } | undefined;
  const real = db.db.executeQuery.bind(db.db);
  (db.db as unknown as { executeQuery: unknown }).executeQuery = (query: { sql: string; parameters: readonly unknown[] }) => {
    captured = query;
    return real(query as never);
  };
  await findEmailsForDelivery(db.db, ids);
  if (!captured) throw new Error('no query');
  console.log(captured.sql);
  for (let k = 0; k < 2; k++) {
    const rows = await q(`EXPLAIN (ANALYZE, BUFFERS) ${captured.sql}`, [...captured.parameters]);
    console.log(rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n'));
  }
  await c.end();
  await db.close();
  await own.drop();
}, 300_000);

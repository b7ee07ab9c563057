import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import { findEmailsForDelivery, MAX_DELIVERY_READ } from '../../../src/modules/emails/emails.repo.js';
import { createMigratedDatabase, insertBareProject, type MigratedDatabase } from '../../helpers/database.js';

/**
 * The delivery read by ids (findEmailsForDelivery) runs at every batch of deliveries, planned once
 * per connection (generic plan). Since migration 0039 keys emails by (id, project_id), `id` alone
 * is not unique to the planner: on an emails table without statistics yet (the first campaign of
 * a new installation, before autovacuum analyses it) it guessed thousands of rows per read and
 * chose a parallel plan, whose worker takes ~10 ms to start: campaign delivery spent twice the
 * database CPU (bench/README "Distribution-ready keys").
 */
let own: MigratedDatabase;
let db: Db;

beforeAll(async () => {
  own = await createMigratedDatabase('deliveryplan', { max: 1, genericPlans: true });
  db = own.db;
  // Many rows and no statistics: as a campaign just materialised on a new installation.
  await sql`ALTER TABLE emails SET (autovacuum_enabled = false)`.execute(db.db);
  const projectId = await insertBareProject(db.db, 'plan');
  await sql`
    INSERT INTO emails (project_id, source, type, to_email, from_email, subject, html, message_id, status)
    SELECT ${projectId}::uuid, 'SEND', 'TRANSACTIONAL', 'r' || i || '@plan.example', 'a@plan.example', 's', repeat('x', 400),
           '<' || i || '@plan.example>', 'PENDING'
    FROM generate_series(1, 100000) i`.execute(db.db);
}, 120_000);

afterAll(() => own?.close());

describe('the delivery read by ids', () => {
  it('is estimated at no more rows than it can return, on an emails table without statistics yet', async () => {
    const ids = (await sql<{ id: string }>`SELECT id FROM emails ORDER BY id LIMIT 16`.execute(db.db)).rows.map((r) => r.id);
    let text = '';
    const execute = db.db.executeQuery.bind(db.db);
    const spy = ((query: Parameters<typeof execute>[0]) => {
      text = (query as { sql: string }).sql;
      return execute(query);
    }) as typeof execute;
    Object.assign(db.db, { executeQuery: spy });
    try {
      expect((await findEmailsForDelivery(db.db, ids)).size).toBe(16);
    } finally {
      Object.assign(db.db, { executeQuery: execute });
    }
    const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN (GENERIC_PLAN) ${sql.raw(text)}`.execute(db.db);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan, plan).toContain('emails_pkey');
    // Without a bound the estimate grows with the table (~3,800 rows here at 100,000 emails, past
    // the cost of a parallel plan in the benchmark's bigger rows).
    expect(Number(/rows=(\d+)/.exec(plan)?.[1]), plan).toBeLessThanOrEqual(MAX_DELIVERY_READ);
    // Every row probed by key: no parallel plan, and no merge or hash join scanning a whole index or
    // table (the plans seen with the LIMIT around the joins: a merge join over emails in project
    // order; with the emails alone bounded: hash joins reading every contact).
    expect(plan).not.toMatch(/Gather|Parallel|Merge|Hash|Seq Scan/);
  });
});

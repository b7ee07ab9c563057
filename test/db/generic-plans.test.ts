import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connect, type Db } from '../../src/db/connection.js';

/**
 * `connect(url, {genericPlans: true})` (the delivery statements' pool of src/worker.ts): each
 * statement is prepared once per connection and planned once, even with array parameters, for
 * which PostgreSQL otherwise keeps making a custom plan at every call.
 */
let generic: Db;
let plain: Db;
beforeAll(() => {
  generic = connect(inject('databaseUrl'), { max: 1, genericPlans: true });
  plain = connect(inject('databaseUrl'), { max: 1 });
});
afterAll(async () => {
  await Promise.all([generic?.close(), plain?.close()]);
});

const statement = (db: Db, ids: number[]) =>
  sql<{ n: number }>`SELECT n FROM generate_series(1, 50) AS n WHERE n = any(${ids}::int[]) ORDER BY n`.execute(db.db);

interface Prepared {
  statement: string;
  generic_plans: number;
  custom_plans: number;
}
const prepared = async (db: Db) =>
  (await sql<Prepared>`SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements`.execute(db.db)).rows.filter((r) =>
    r.statement.includes('generate_series(1, 50)'),
  );

describe('generic-plan connections', () => {
  it('run each statement prepared, with one generic plan reused, and give the same answers', async () => {
    for (let i = 1; i <= 8; i++) {
      const ids = [i, i + 10, 99];
      const [a, b] = await Promise.all([statement(generic, ids), statement(plain, ids)]);
      expect(a.rows).toEqual(b.rows);
      expect(a.rows.map((r) => r.n)).toEqual([i, i + 10]);
    }
    const [mine] = await prepared(generic);
    expect(mine).toMatchObject({ generic_plans: 8, custom_plans: 0 });
    // Without the option nothing is prepared: PostgreSQL plans each call.
    expect(await prepared(plain)).toEqual([]);
  });

  it('keep transactions and errors as they were', async () => {
    await expect(sql`SELECT 1 / ${0}::int`.execute(generic.db)).rejects.toThrow(/division by zero/);
    const n = await generic.db.transaction().execute(async (trx) => (await sql<{ n: number }>`SELECT ${41}::int + 1 AS n`.execute(trx)).rows[0]?.n);
    expect(n).toBe(42);
  });
});

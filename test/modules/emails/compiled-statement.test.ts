import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/schema.js';
import { compiledStatement } from '../../../src/modules/emails/compiled-statement.js';

// Compiling needs no connection: the pool is never used.
const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ max: 1 }) }) });
const other = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ max: 1 }) }) });

describe('compiledStatement', () => {
  it('builds and compiles once per database, then runs the same SQL with each call\'s values in their places', () => {
    let builds = 0;
    const build = (d: Kysely<Database>, ids: readonly string[], status: string) => {
      builds++;
      return d.updateTable('emails').set({ status: 'SENDING' }).where('id', '=', sql<string>`any(${ids}::uuid[])`).where('status', '=', status as 'PENDING').returning('id').compile();
    };
    const statement = compiledStatement(build, 2);
    const first = statement(db, ['a'], 'PENDING');
    const second = statement(db, ['b', 'c'], 'FAILED');
    expect(builds).toBe(1);
    // What kysely compiles for those values, parameter for parameter.
    for (const [query, args] of [[first, [['a'], 'PENDING']], [second, [['b', 'c'], 'FAILED']]] as const) {
      const fresh = build(db, args[0], args[1]);
      expect(query.sql).toBe(fresh.sql);
      expect(query.parameters).toEqual(fresh.parameters);
    }
    expect(second.parameters).toEqual(['SENDING', ['b', 'c'], 'FAILED']);
    expect(first.queryId).not.toBe(second.queryId);
    statement(other, ['d'], 'PENDING');
    expect(builds).toBe(4); // the two fresh builds above, then once for the other database
  });

  it('refuses a statement that does not use each value exactly once', () => {
    const unused = compiledStatement((d, _ids: readonly string[]) => sql`SELECT 1`.compile(d), 1);
    expect(() => unused(db, ['a'])).toThrow(/must be one parameter/);
    const twice = compiledStatement((d, ids: readonly string[]) => sql`SELECT ${ids}, ${ids}`.compile(d), 1);
    expect(() => twice(db, ['a'])).toThrow(/must be one parameter/);
  });
});

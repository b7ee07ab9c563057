import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * A statement kysely builds and compiles once per database handle, then runs with new values:
 * the delivery statements run at every batch of deliveries (a few emails each), and building
 * and compiling them cost more of the worker's CPU than PostgreSQL's answer took to parse
 * (docs/performance.md "Delivery"). The SQL text is the one kysely compiles, so it is the same
 * at every run (the generic-plan pool prepares it once per connection).
 *
 * `build` receives stand-ins for the values and must use each exactly once as a parameter
 * (checked when it is compiled); every other parameter of the statement stays as compiled.
 */
export function compiledStatement<V extends unknown[], R>(
  build: (db: Kysely<Database>, ...values: V) => CompiledQuery<R>,
  arity: V['length'],
): (db: Kysely<Database>, ...values: V) => CompiledQuery<R> {
  const compiled = new WeakMap<Kysely<Database>, { sql: string; parameters: readonly unknown[]; at: readonly number[] }>();
  return (db, ...values) => {
    let statement = compiled.get(db);
    if (!statement) {
      const slots = Array.from({ length: arity }, (_, n) => ({ slot: n }));
      const query = build(db, ...(slots as unknown as V));
      const at = slots.map((slot) => {
        const n = query.parameters.indexOf(slot);
        if (n === -1 || query.parameters.lastIndexOf(slot) !== n) throw new Error(`compiledStatement: value ${slot.slot} must be one parameter of the statement`);
        return n;
      });
      statement = { sql: query.sql, parameters: query.parameters, at };
      compiled.set(db, statement);
    }
    const parameters = [...statement.parameters];
    for (let n = 0; n < values.length; n++) parameters[statement.at[n] as number] = values[n];
    // A fresh query id per run (CompiledQuery.raw), as a newly compiled query would have.
    return CompiledQuery.raw(statement.sql, parameters) as CompiledQuery<R>;
  };
}

import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { connect, type ConnectOptions, type Db } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { Database } from '../../src/db/schema.js';

/** A database of its own on the shared test server (no migrations run); `drop()` removes it. */
export interface OwnDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

async function onServer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: inject('databaseUrl') });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * For tests that must not share the test database: a spawned server whose worker must not take
 * other files' jobs, a catalog read that other files' tables would disturb, a schema changed on
 * purpose. `prefix`: lower-case letters and underscores.
 */
export async function createOwnDatabase(prefix: string): Promise<OwnDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await onServer(`CREATE DATABASE ${name}`);
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** A database of its own migrated to the latest schema, with a pool on it; `close()` ends the pool and drops the database. */
export interface MigratedDatabase {
  readonly url: string;
  readonly db: Db;
  close(): Promise<void>;
}

/** {@link createOwnDatabase}, migrated, with a pool of `opts` on it. */
export async function createMigratedDatabase(prefix: string, opts: ConnectOptions = {}): Promise<MigratedDatabase> {
  const own = await createOwnDatabase(prefix);
  const db = connect(own.url, opts);
  await migrateToLatest(db.db, db.pool);
  return {
    url: own.url,
    db,
    close: async () => {
      await db.close();
      await own.drop();
    },
  };
}

/** A project row written directly (no owner, no API; keys `pk_<name>` and `sk_<name>`): its id. */
export async function insertBareProject(db: Kysely<Database>, name: string): Promise<string> {
  const { rows } = await sql<{ id: string }>`
    INSERT INTO projects (name, public_key, secret_key) VALUES (${name}, ${`pk_${name}`}, ${`sk_${name}`}) RETURNING id`.execute(db);
  return rows[0]?.id ?? '';
}

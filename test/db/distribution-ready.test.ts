import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/database.js';

// DESIGN §1 / issue 16 point 7: every tenant table can be distributed by `project_id` (Citus):
// `project_id` is NOT NULL (no row without its distribution column), its primary key and every unique constraint include `project_id`, and every foreign key
// between tenant tables includes it on both sides. Read from the catalog of a database of its own
// that the migrations alone made (the shared test database also holds other tests' tables).
//
// The tables below are not distributed, each with why: reference tables are copied to every node
// (small, and read or kept unique across projects: by a Stripe id, an invitation token, a domain
// name); local ones stay on the coordinator. Citus refuses a foreign key from a reference table
// to a distributed one, so none may have one. docs/scaling.md says the same in prose.
const NOT_TENANT: Record<string, string> = {
  projects: 'reference: the tenants themselves',
  users: 'reference: accounts span projects',
  account_tokens: 'reference: per user (verification, password reset)',
  oauth_identities: 'reference: per user',
  ended_sessions: 'reference: per session',
  login_throttles: 'reference: per address',
  domains: 'reference: a verified domain belongs to one project of all, and received mail finds its project by domain',
  project_invitations: 'reference: found by token before its project is known',
  project_billing: 'reference: one row per project, found by Stripe customer and subscription ids',
  billing_events: "reference: Stripe's event ids, unique across projects",
  project_suspensions: "reference: an operator's record of a project's suspensions",
  inbound_feedback: "local to the coordinator: the bounce receiver's log for the operator, with rows that name no project",
  worker_heartbeats: 'local to the coordinator: job queue bookkeeping',
  kysely_migration: 'local to the coordinator: schema version',
  kysely_migration_lock: 'local to the coordinator: schema version',
};

interface Row {
  table: string;
  has_project: boolean;
  project_nullable: boolean;
  kind: 'p' | 'u' | 'f' | null;
  columns: string[] | null;
  ref_table: string | null;
  ref_columns: string[] | null;
  ref_has_project: boolean | null;
  definition: string | null;
}

let own: OwnDatabase;

beforeAll(async () => {
  own = await createOwnDatabase('distribution');
  const db = connect(own.url, { max: 2 });
  try {
    await migrateToLatest(db.db, db.pool);
  } finally {
    await db.close();
  }
}, 120_000);

afterAll(async () => {
  await own?.drop();
});

async function catalog(): Promise<Row[]> {
  const client = new pg.Client({ connectionString: own.url });
  await client.connect();
  try {
    const { rows } = await client.query<Row>(`
      SELECT c.relname AS table,
             EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped) AS has_project,
             EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped AND NOT a.attnotnull) AS project_nullable,
             k.contype AS kind,
             (SELECT array_agg(a.attname::text ORDER BY x.ord) FROM unnest(k.conkey) WITH ORDINALITY x(n, ord) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = x.n) AS columns,
             r.relname AS ref_table,
             (SELECT array_agg(a.attname::text ORDER BY x.ord) FROM unnest(k.confkey) WITH ORDINALITY x(n, ord) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = x.n) AS ref_columns,
             EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attname = 'project_id' AND NOT a.attisdropped) AS ref_has_project,
             pg_get_constraintdef(k.oid) AS definition
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
      LEFT JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype IN ('p', 'u', 'f')
      LEFT JOIN pg_class r ON r.oid = k.confrelid
      WHERE c.relkind IN ('r', 'p')`);
    // Unique indexes that are not constraints count as unique constraints.
    const { rows: indexes } = await client.query<Row>(`
      SELECT t.relname AS table, true AS has_project, false AS project_nullable, 'u' AS kind,
             (SELECT array_agg(a.attname::text ORDER BY x.ord) FROM unnest(i.indkey::int2[]) WITH ORDINALITY x(n, ord) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = x.n) AS columns,
             NULL AS ref_table, NULL AS ref_columns, NULL AS ref_has_project, pg_get_indexdef(i.indexrelid) AS definition
      FROM pg_index i
      JOIN pg_class t ON t.oid = i.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
      WHERE i.indisunique AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = 'project_id')`);
    return [...rows, ...indexes];
  } finally {
    await client.end();
  }
}

/** Every breach of the rule, one line each. */
function breaches(rows: Row[]): string[] {
  const out = new Set<string>();
  const tables = new Map<string, Row[]>();
  for (const r of rows) tables.set(r.table, [...(tables.get(r.table) ?? []), r]);
  for (const [table, list] of tables) {
    if (table in NOT_TENANT) {
      for (const f of list.filter((r) => r.kind === 'f' && r.ref_table && !(r.ref_table in NOT_TENANT))) {
        out.add(`${table}: foreign key (${f.columns?.join(', ')}) from reference data to ${f.ref_table}`);
      }
      continue;
    }
    if (!list[0]?.has_project) {
      out.add(`${table}: no project_id`);
      continue;
    }
    if (list[0]?.project_nullable) out.add(`${table}: project_id may be null`);
    const pk = list.find((r) => r.kind === 'p');
    if (!pk) out.add(`${table}: no primary key`);
    else if (!pk.columns?.includes('project_id')) out.add(`${table}: primary key (${pk.columns?.join(', ')})`);
    for (const u of list.filter((r) => r.kind === 'u')) {
      if (!u.columns?.includes('project_id')) out.add(`${table}: unique (${u.columns?.join(', ')})`);
    }
    for (const f of list.filter((r) => r.kind === 'f')) {
      if (!f.ref_has_project || !f.ref_table || f.ref_table in NOT_TENANT) continue; // to reference data
      const i = f.columns?.indexOf('project_id') ?? -1;
      if (i < 0 || f.ref_columns?.[i] !== 'project_id') out.add(`${table}: foreign key (${f.columns?.join(', ')}) to ${f.ref_table} (${f.ref_columns?.join(', ')})`);
    }
  }
  return [...out].sort();
}

describe('the schema is ready to distribute by project_id', () => {
  it('keys every tenant table by project_id, and links reference data to reference data only', async () => {
    expect(breaches(await catalog())).toEqual([]);
  });
});

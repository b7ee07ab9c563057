import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/database.js';

// DESIGN §1 / issue 16 point 7: every tenant table can be distributed by `project_id` (Citus):
// its primary key and every unique constraint include `project_id`, and every foreign key
// between tenant tables includes it on both sides. Read from the catalog of a database of its own
// that the migrations alone made (the shared test database also holds other tests' tables). Tables without `project_id` are either reference data (replicated to every node) or
// node-local, each named below with why.
//
// NOT_YET lists what breaks the rule today, exactly; the migrations that make the schema ready
// remove them (docs/scaling.md). A table, key or constraint added in breach of the rule fails here
// at once, and so does an entry of NOT_YET that no longer breaks it: the list only shrinks.
const NOT_TENANT: Record<string, string> = {
  projects: 'reference: the tenants themselves',
  users: 'reference: accounts span projects',
  account_tokens: 'reference: per user (verification, password reset)',
  oauth_identities: 'reference: per user',
  ended_sessions: 'reference: per session',
  login_throttles: 'reference: per address',
  worker_heartbeats: 'local to the coordinator: job queue bookkeeping',
  kysely_migration: 'local to the coordinator: schema version',
  kysely_migration_lock: 'local to the coordinator: schema version',
};

const NOT_YET = [
  'analytics_campaign_counts: foreign key (campaign_id) to campaigns (id)',
  'attachment_sets: primary key (id)',
  'billing_events: primary key (id)',
  'campaign_email_counts: foreign key (campaign_id) to campaigns (id)',
  'campaign_email_counts: primary key (campaign_id, bucket, shard)',
  'campaign_link_counts: foreign key (campaign_id) to campaigns (id)',
  'campaign_link_counts: primary key (campaign_id, url_key, shard)',
  'campaigns: foreign key (segment_id) to segments (id)',
  'campaigns: primary key (id)',
  'contact_data_indexes: primary key (id)',
  'contacts: primary key (id)',
  'domains: primary key (id)',
  'domains: unique (domain)',
  'emails: foreign key (attachment_set_id) to attachment_sets (id)',
  'emails: foreign key (campaign_id) to campaigns (id)',
  'emails: foreign key (contact_id) to contacts (id)',
  'emails: foreign key (template_id) to templates (id)',
  'emails: primary key (id)',
  'emails: unique (campaign_id, contact_id)',
  'emails: unique (message_id)',
  'emails: unique (workflow_execution_id, workflow_step_id)',
  'events: foreign key (contact_id) to contacts (id)',
  'events: primary key (id)',
  'import_chunks: no project_id',
  'inbound_feedback: primary key (id)',
  'inbound_messages: primary key (id)',
  'jobs: primary key (id)',
  'outbox: foreign key (email_id) to emails (id)',
  'outbox: primary key (id)',
  'outbox: unique (email_id)',
  'project_billing: unique (stripe_customer_id)',
  'project_billing: unique (stripe_subscription_id)',
  'project_invitations: primary key (id)',
  'project_invitations: unique (token_hash)',
  'project_suspensions: primary key (id)',
  'segment_members: no project_id',
  'segments: primary key (id)',
  'soft_bounces: no primary key',
  'soft_bounces: unique (email_id, report_key)',
  'templates: primary key (id)',
  'workflow_enrolments: foreign key (contact_id) to contacts (id)',
  'workflow_executions: foreign key (contact_id) to contacts (id)',
  'workflow_steps: foreign key (template_id) to templates (id)',
];

interface Row {
  table: string;
  has_project: boolean;
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
      SELECT t.relname AS table, true AS has_project, 'u' AS kind,
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
    if (table in NOT_TENANT) continue;
    if (!list[0]?.has_project) {
      out.add(`${table}: no project_id`);
      continue;
    }
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
  it('has no breach outside the known list, and every known one still breaks the rule', async () => {
    const found = breaches(await catalog());
    // A breach not listed: a table, key or constraint added without project_id.
    expect(found.filter((b) => !NOT_YET.includes(b))).toEqual([]);
    // A listed breach that is gone: take it off NOT_YET.
    expect(NOT_YET.filter((b) => !found.includes(b))).toEqual([]);
  });
});

import { createHash, randomUUID } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compileCondition, validateCondition } from '../../src/conditions/index.js';
import type { Filter } from '../../src/conditions/tree.js';
import { connect, type Db } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/**
 * The compiled SQL of the index-served operator families (docs/conditions.md "Indexes and plans")
 * keeps its index: EXPLAIN of the count the segment code runs (and, for events, the members page)
 * must reach the table through the named index, with an Index Cond on the filtered column(s).
 *
 * Runs on a database of its own (created and migrated here, dropped after), seeded set-based with
 * two projects of N contacts plus events, emails and segment members, then ANALYZEd: the planner
 * sees real statistics no other test file disturbs, and ANALYZE never touches the shared tables.
 * Each EXPLAIN runs with `SET LOCAL enable_seqscan = off`, so a Seq Scan only appears when the
 * SQL offers no index path at all. Asserted: index name + the column its Index Cond constrains
 * (an index walked without an Index Cond is a full scan in disguise), and no Seq Scan anywhere;
 * never costs or exact plan shapes.
 */

const N = 5000;
let admin: Db;
let db: Db;
let dbName: string;
let projectId: string;
let staticSegmentId: string;
/** A substring of one email per project (user1234's, see the seed), for the trigram check. */
const RARE = createHash('md5').update('1234').digest('hex').slice(0, 8);

function databaseUrl(name: string): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

beforeAll(async () => {
  dbName = `mp_explain_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  admin = connect(inject('databaseUrl'), { max: 1 });
  await sql`CREATE DATABASE ${sql.id(dbName)}`.execute(admin.db);
  db = connect(databaseUrl(dbName), { max: 2 });
  await migrateToLatest(db.db, db.pool);

  const projects = await db.db
    .insertInto('projects')
    // Six projects alike: the keys lead on id (migration 0039), and where the project held half the
    // rows a whole scan of one, skipping over its id (PostgreSQL 18), competed with the project's range.
    .values(['explained', 'other', 'third', 'fourth', 'fifth', 'sixth'].map((name) => ({ name, public_key: `pk_${randomUUID()}`, secret_key: `sk_${randomUUID()}` })))
    .returning('id')
    .execute();
  projectId = projects[0]?.id ?? '';
  for (const { id: pid } of projects) {
    // 1% plan=pro, ages 0..79, created over ~3 years; 2% of contacts purchased, the rest logged in;
    // every 10th got an email, a third of those opened it.
    await sql`INSERT INTO contacts (project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${pid}::uuid, 'user' || i || '.' || left(md5(i::text), 8) || '@' || ${pid.slice(-8)} || '.example', i % 7 <> 0,
        jsonb_build_object('plan', CASE WHEN i % 100 = 0 THEN 'pro' ELSE 'free' END, 'age', i % 80, 'city', 'city ' || (i % 300)),
        now() - (i % 1000) * interval '1 day', now() - (i % 1000) * interval '1 day'
      FROM generate_series(1, ${N}) i`.execute(db.db);
    await sql`INSERT INTO events (project_id, contact_id, name, created_at)
      SELECT project_id, id, CASE WHEN n % 50 = 0 THEN 'purchase' ELSE 'login' END, now() - (n % 400) * interval '1 day'
      FROM (SELECT c.project_id, c.id, row_number() OVER () AS n FROM contacts c WHERE c.project_id = ${pid}::uuid) c`.execute(db.db);
    await sql`INSERT INTO emails (project_id, contact_id, source, type, to_email, from_email, subject, html, message_id, sent_at, opened_at)
      SELECT project_id, id, 'SEND', 'TRANSACTIONAL', email, 'a@b.c', 's', 'h', gen_random_uuid()::text, now() - (n % 30) * interval '1 day',
        CASE WHEN n % 3 = 0 THEN now() - (n % 30) * interval '1 day' END
      FROM (SELECT c.project_id, c.id, c.email, row_number() OVER () AS n FROM contacts c WHERE c.project_id = ${pid}::uuid) c
      WHERE n % 10 = 0`.execute(db.db);
  }
  // A small STATIC segment next to a large one, so segment_id is selective in segment_members.
  const segments = await db.db
    .insertInto('segments')
    .values(['static', 'everyone'].map((name) => ({ project_id: projectId, name, type: 'STATIC' as const })))
    .returning('id')
    .execute();
  staticSegmentId = segments[0]?.id ?? '';
  await sql`INSERT INTO segment_members (segment_id, project_id, contact_id)
    SELECT ${staticSegmentId}::uuid, project_id, id FROM contacts WHERE project_id = ${projectId}::uuid ORDER BY id LIMIT 50`.execute(db.db);
  await sql`INSERT INTO segment_members (segment_id, project_id, contact_id)
    SELECT ${segments[1]?.id ?? ''}::uuid, project_id, id FROM contacts WHERE project_id = ${projectId}::uuid`.execute(db.db);
  await sql`VACUUM ANALYZE contacts, events, emails, segment_members`.execute(db.db);
});
afterAll(async () => {
  await db?.close();
  if (admin) {
    await sql`DROP DATABASE IF EXISTS ${sql.id(dbName)} WITH (FORCE)`.execute(admin.db);
    await admin.close();
  }
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Filter?: string;
  'Join Filter'?: string;
  'Hash Cond'?: string;
  'Merge Cond'?: string;
  Plans?: PlanNode[];
}
interface Explained {
  nodes: PlanNode[];
  /** Compiled SQL + parameters + the plan as text, for failure messages. */
  text: string;
}

const flatten = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(flatten)];
const render = (n: PlanNode, depth = 0): string => {
  const head = `${'  '.repeat(depth)}-> ${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`;
  const details = (['Index Cond', 'Recheck Cond', 'Filter', 'Join Filter', 'Hash Cond', 'Merge Cond'] as const)
    .filter((k) => n[k])
    .map((k) => `${'  '.repeat(depth + 2)}${k}: ${n[k]}`);
  return [head, ...details, ...(n.Plans ?? []).map((c) => render(c, depth + 1))].join('\n');
};

/** EXPLAIN (FORMAT JSON) of `query` with sequential scans disabled (SET LOCAL: this transaction only). */
async function explain(query: RawBuilder<unknown>): Promise<Explained> {
  return db.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL enable_seqscan = off`.execute(trx);
    const { rows } = await sql<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>`EXPLAIN (FORMAT JSON, COSTS OFF) ${query}`.execute(trx);
    const root = rows[0]?.['QUERY PLAN'][0].Plan;
    if (!root) throw new Error('EXPLAIN returned no plan');
    const compiled = query.compile(trx);
    return { nodes: flatten(root), text: `${compiled.sql}\n${JSON.stringify(compiled.parameters)}\n${render(root)}` };
  });
}

async function compiled(filters: Filter[]) {
  const tree = await validateCondition(db.db, projectId, { logic: 'AND', groups: [{ filters }] }, 'condition');
  return compileCondition(db.db, projectId, tree);
}
/** The count of segments.repo countContacts (also the DYNAMIC segment refresh). */
const countQuery = async (...filters: Filter[]) =>
  explain(sql`SELECT count(*) AS n FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${await compiled(filters)}`);
/** The page of segments.repo pageContacts (GET /segments/:id/contacts of a DYNAMIC segment). */
const pageQuery = async (...filters: Filter[]) =>
  explain(sql`SELECT c.* FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${await compiled(filters)}
    ORDER BY c.created_at DESC, c.id DESC LIMIT ${20} OFFSET ${0}`);

const INDEX_NODES = new Set(['Index Scan', 'Index Only Scan', 'Bitmap Index Scan']);

/** One way into a table: an index, and patterns its Index Cond must all match. */
type Access = [index: string, ...cond: RegExp[]];

/** Index nodes of the plan matching `access`. */
const indexUses = (plan: Explained, [index, ...cond]: Access) =>
  plan.nodes.filter((n) => INDEX_NODES.has(n['Node Type']) && n['Index Name'] === index && cond.every((re) => re.test(n['Index Cond'] ?? '')));

/** The plan takes at least one of `ways` (index + Index Cond), and scans no table sequentially. */
function expectIndexed(plan: Explained, ...ways: Access[]): void {
  const wanted = ways.map(([index, ...cond]) => `${index} with Index Cond ${cond.join(' & ') || '(any)'}`).join(' | ');
  expect(ways.flatMap((w) => indexUses(plan, w)).length, `expected ${wanted}:\n${plan.text}`).toBeGreaterThan(0);
  expect(plan.nodes.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']), `unexpected Seq Scan:\n${plan.text}`).toEqual([]);
}

const EVENTS_BY_NAME = 'events_project_name_created_contact_idx';
const EVENTS_BY_CONTACT = 'events_contact_created_idx';

describe('index-served condition families (EXPLAIN, enable_seqscan = off)', () => {
  it('data.<key> equals → Bitmap Index Scan on contacts_data_idx (@>, both stored forms OR-ed)', async () => {
    expectIndexed(await countQuery({ field: 'data.plan', operator: 'equals', value: 'pro' }), ['contacts_data_idx', /data @> /]);
    const forms = await countQuery({ field: 'data.age', operator: 'equals', value: 30 });
    expectIndexed(forms, ['contacts_data_idx', /"age": 30\b/]);
    expectIndexed(forms, ['contacts_data_idx', /"age": "30"/]);
  });

  it('email equals → contacts_project_email_key on (project_id, email)', async () => {
    expectIndexed(await countQuery({ field: 'email', operator: 'equals', value: ' User1234.X@Example.com ' }), ['contacts_project_email_key', /\bproject_id = /, /\bemail = /]);
  });

  it.each<Filter>([
    { field: 'createdAt', operator: 'within', value: 2, unit: 'days' },
    { field: 'createdAt', operator: 'olderThan', value: 900, unit: 'days' },
    { field: 'createdAt', operator: 'lessThan', value: '2020-01-01T00:00:00Z' },
    { field: 'createdAt', operator: 'greaterThanOrEqual', value: new Date(Date.now() - 86_400_000).toISOString() },
  ])('createdAt $operator → range on contacts_project_created_idx', async (filter) => {
    expectIndexed(await countQuery(filter), ['contacts_project_created_idx', /\bproject_id = /, /\bcreated_at [<>]=? /]);
  });

  it('event.<name> triggered / triggeredWithin → events_project_name_created_contact_idx on (project_id, name[, created_at])', async () => {
    expectIndexed(await countQuery({ field: 'event.purchase', operator: 'triggered' }), [EVENTS_BY_NAME, /\bproject_id = /, /\bname = /]);
    const within = await countQuery({ field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' });
    expectIndexed(within, [EVENTS_BY_NAME, /\bproject_id = /, /\bname = /, /\bcreated_at >= /]);
  });

  it('event.<name> notTriggered → an events index (anti join over the name index, or per-contact probes)', async () => {
    const plan = await countQuery({ field: 'event.purchase', operator: 'notTriggered' });
    expectIndexed(plan, [EVENTS_BY_NAME, /\bproject_id = /, /\bname = /], [EVENTS_BY_CONTACT, /\bcontact_id = /]);
  });

  it('event.<name> on the members page (ORDER BY created_at DESC LIMIT) → an events index', async () => {
    for (const filter of [
      { field: 'event.purchase', operator: 'triggered' },
      { field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' },
      { field: 'event.purchase', operator: 'notTriggered' },
    ] satisfies Filter[]) {
      const plan = await pageQuery(filter);
      expectIndexed(plan, [EVENTS_BY_NAME, /\bproject_id = /, /\bname = /], [EVENTS_BY_CONTACT, /\bcontact_id = /]);
    }
  });

  it('segment.<id> memberOfSegment of a STATIC segment → segment_members_pkey on segment_id', async () => {
    const plan = await countQuery({ field: `segment.${staticSegmentId}`, operator: 'memberOfSegment' });
    expectIndexed(plan, ['segment_members_pkey', /\bsegment_id = /]);
  });

  it('email.<milestone> triggered / triggeredWithin → an emails index (per project or per contact)', async () => {
    for (const filter of [
      { field: 'email.opened', operator: 'triggered' },
      { field: 'email.opened', operator: 'triggeredWithin', value: 3, unit: 'days' },
    ] satisfies Filter[]) {
      const plan = await countQuery(filter);
      // At this size PostgreSQL 18 may also skip-scan the key (id, project_id) (migration 0039) by
      // project: still reached through project_id, never a sequential scan.
      expectIndexed(plan, ['emails_project_created_idx', /\bproject_id = /], ['emails_contact_idx', /\bcontact_id = /], ['emails_pkey', /\bproject_id = /]);
    }
  });
  it('email contains → Bitmap Index Scan on contacts_email_trgm_idx (bare ILIKE: email is NOT NULL)', async () => {
    // The predicate alone (no project_id): at this size the project range scan is cheaper than the
    // trigram index, so only without it does the plan show that the compiled SQL is indexable.
    const where = await compiled([{ field: 'email', operator: 'contains', value: RARE }]);
    expectIndexed(await explain(sql`SELECT count(*) FROM contacts c WHERE ${where}`), ['contacts_email_trgm_idx', /~~\*/]);
  });
});

/**
 * Row filters today (docs/conditions.md), pinned here so the docs change with them: when one of
 * these becomes index-served, move it to the block above.
 */
describe('not index-served today (row filters)', () => {
  it('updatedAt compare: no index has updated_at, so it is a row filter', async () => {
    const plan = await countQuery({ field: 'updatedAt', operator: 'greaterThanOrEqual', value: new Date(Date.now() - 86_400_000).toISOString() });
    expect(plan.nodes.filter((n) => /updated_at/.test(n['Index Cond'] ?? '')), plan.text).toEqual([]);
  });
});


import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createAppDeps } from '../../src/app-deps.js';
import { loadConfig } from '../../src/config.js';
import { connect, type Db } from '../../src/db/connection.js';
import { MIGRATION_TABLE, migrateToLatest } from '../../src/db/migrate.js';
import { memoryStore } from '../../src/http/rate-limit.js';
import { bearer, newProject } from '../helpers/accounts.js';
import { TEST_SECRET } from '../helpers/app.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/database.js';
import { addVerifiedDomain } from '../modules/emails/helpers.js';

// An upgrade in progress (docs/operations.md "Upgrades"): the next version migrated the database
// (expand only: a column and a table added, its migration recorded), and a process of this
// version starts on it — a process of the previous release restarted before it was replaced. It
// must start, leave the newer migration alone, and serve its routes.
const NEXT = '9999_next_version_expands';
let own: OwnDatabase;
let url = '';
let db: Db;
let app: FastifyInstance;

beforeAll(async () => {
  own = await createOwnDatabase('newer_schema');
  url = own.url;
  db = connect(url, { max: 4 });
  await migrateToLatest(db.db, db.pool);
  // What the next version's migration did: expand only.
  await sql`ALTER TABLE contacts ADD COLUMN next_version_note text`.execute(db.db);
  await sql`CREATE TABLE next_version_things (id uuid PRIMARY KEY, project_id uuid NOT NULL)`.execute(db.db);
  await sql`INSERT INTO ${sql.table(MIGRATION_TABLE)} (name, timestamp) VALUES (${NEXT}, ${new Date().toISOString()})`.execute(db.db);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await db?.close();
  await own?.drop();
});

describe('this version on the schema of a newer one', () => {
  it('migrates without touching the newer migration, and says which it found', async () => {
    await expect(migrateToLatest(db.db, db.pool)).resolves.toEqual({ newer: [NEXT] });
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(MIGRATION_TABLE)} WHERE name = ${NEXT}`.execute(db.db);
    expect(rows[0]?.n).toBe(1);
  });

  it('serves its main routes and is ready', async () => {
    const config = loadConfig({ DATABASE_URL: url, SECRET: TEST_SECRET, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000', SIGNIN_RATE_LIMIT_PER_MINUTE: '1000000' });
    app = await buildApp(createAppDeps(config, db.db), { rateLimitStore: memoryStore(), logger: (await import('pino')).default({ level: 'error' }) });
    expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
    const { project } = await newProject(app);
    const tracked = await app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.public), payload: { email: 'ada@example.com', event: 'signed_up', data: { plan: 'pro' } } });
    expect(tracked.statusCode, tracked.body).toBe(200);
    const contacts = await app.inject({ method: 'GET', url: '/contacts?search=ada', headers: bearer(project.secret) });
    expect(contacts.statusCode, contacts.body).toBe(200);
    const [contact] = contacts.json<{ data: { id: string; data: unknown }[] }>().data;
    expect(contact?.data).toEqual({ plan: 'pro' });
    const patched = await app.inject({ method: 'PATCH', url: `/contacts/${contact?.id}`, headers: bearer(project.secret), payload: { data: { plan: 'team' } } });
    expect(patched.statusCode, patched.body).toBe(200);
    const segment = await app.inject({ method: 'POST', url: '/segments', headers: bearer(project.secret), payload: { name: 'Teams', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'team' }] }] } } });
    expect(segment.statusCode, segment.body).toBe(201);
    expect(segment.json<{ memberCount: number }>().memberCount).toBe(1);
    const events = await app.inject({ method: 'GET', url: '/events/names', headers: bearer(project.secret) });
    expect(events.statusCode, events.body).toBe(200);
    const { domain } = await addVerifiedDomain({ db, config }, project.id);
    const sent = await app.inject({ method: 'POST', url: '/v1/send', headers: bearer(project.secret), payload: { to: 'ada@example.com', from: `hello@${domain}`, subject: 'Hi', body: '<p>Hi</p>' } });
    expect(sent.statusCode, sent.body).toBe(200);
    const campaign = await app.inject({ method: 'POST', url: '/campaigns', headers: bearer(project.secret), payload: { name: 'News', subject: 'News', body: '<p>News</p>', from: `news@${domain}` } });
    expect(campaign.statusCode, campaign.body).toBe(201);
    const id = campaign.json<{ data: { id: string } }>().data.id;
    const started = await app.inject({ method: 'POST', url: `/campaigns/${id}/send`, headers: bearer(project.secret), payload: {} });
    expect(started.statusCode, started.body).toBe(200);
  });
});

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestProject } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';
import { createSendTestApp, newSender, send, type SendTestApp } from '../modules/emails/helpers.js';
import { track } from '../modules/events/helpers.js';

/**
 * The Idempotency-Key rules (format, 5xx retention, TTL) on the real POST /v1/send and
 * POST /v1/track, not only on the stand-in route of idempotency.test.ts. A database of this
 * file's own: the 5xx cases install a trigger that fails inserts of one marked row.
 */
let t: SendTestApp;
let project: TestProject;
let from: string;
beforeAll(async () => {
  t = await createSendTestApp();
  ({ project, from } = await newSender(t));
  await sql`
    CREATE FUNCTION explode() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'test failure after the key was claimed'; END $$`.execute(t.db.db);
  await sql`CREATE TRIGGER explode_events BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.name = 'explode') EXECUTE FUNCTION explode()`.execute(t.db.db);
  await sql`CREATE TRIGGER explode_emails BEFORE INSERT ON emails FOR EACH ROW WHEN (NEW.subject = 'explode') EXECUTE FUNCTION explode()`.execute(t.db.db);
});
afterAll(() => t.close());

const routes = {
  '/v1/send': {
    call: (key: string | undefined, fail = false) =>
      send(t.app, project, { to: 'idem@example.com', from, subject: fail ? 'explode' : 'Hi', body: '<p>Hi</p>' }, key === undefined ? {} : { 'idempotency-key': key }),
    performed: async () => Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM emails WHERE project_id = ${project.id}`.execute(t.db.db)).rows[0]?.n),
  },
  '/v1/track': {
    call: (key: string | undefined, fail = false) =>
      track(t.app, project, { email: 'idem@example.com', event: fail ? 'explode' : 'order' }, key === undefined ? {} : { 'idempotency-key': key }),
    performed: async () =>
      Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE project_id = ${project.id} AND name = 'order'`.execute(t.db.db)).rows[0]?.n),
  },
} as const;

describe.each(Object.entries(routes))('Idempotency-Key on %s', (path, route) => {
  it('rejects keys outside 1–255 printable ASCII with 422 and performs nothing', async () => {
    const before = await route.performed();
    for (const [key, code] of [['', 'too_small'], ['k'.repeat(256), 'too_big'], ['caf\u00e9', 'invalid_string'], ['tab\there', 'invalid_string']] as const) {
      const error = expectEnvelope(await route.call(key), 422, 'VALIDATION_ERROR');
      expect(error.errors, JSON.stringify(key)).toEqual([expect.objectContaining({ field: 'Idempotency-Key', code })]);
    }
    expect(await route.performed()).toBe(before);
    const longest = `${randomUUID()}${'k'.repeat(219)}`;
    expect((await route.call(longest)).statusCode).toBe(200);
    expect(await route.performed()).toBe(before + 1);
  });

  it('keeps the key after a 500, so the retry is refused with the original status', async () => {
    const key = `fails-${randomUUID()}`;
    expectEnvelope(await route.call(key, true), 500, 'INTERNAL_SERVER_ERROR');
    const again = expectEnvelope(await route.call(key), 409, 'IDEMPOTENCY_KEY_REUSED');
    expect(again.details).toMatchObject({ key, originalRequest: { method: 'POST', path }, originalStatusCode: 500 });
  });

  it('treats a key older than the TTL as new and refuses one younger', async () => {
    const [old, fresh] = [`old-${randomUUID()}`, `fresh-${randomUUID()}`];
    await t.db.db
      .insertInto('idempotency_keys')
      .values([
        { project_id: project.id, key: old, method: 'POST', path, status_code: 200, created_at: sql`now() - make_interval(hours => ${t.config.idempotencyTtlHours + 1})` },
        { project_id: project.id, key: fresh, method: 'POST', path, status_code: 200, created_at: sql`now() - make_interval(hours => ${t.config.idempotencyTtlHours - 1})` },
      ])
      .execute();
    const before = await route.performed();
    expect((await route.call(old)).statusCode).toBe(200);
    expectEnvelope(await route.call(fresh), 409, 'IDEMPOTENCY_KEY_REUSED');
    expect(await route.performed()).toBe(before + 1);
  });
});

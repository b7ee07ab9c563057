import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertContacts, type ContactUpsert } from '../../../src/modules/contacts/contacts.upsert.js';
import { insertEvents } from '../../../src/modules/events/events.insert.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { newProject } from '../../helpers/accounts.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const up = (projectId: string, items: ContactUpsert[]) => t.db.db.transaction().execute((trx) => upsertContacts(trx, projectId, items));
const eventsOf = (contactId: string) =>
  t.db.db.selectFrom('events').select(['name']).where('contact_id', '=', contactId).orderBy('created_at').orderBy('id').execute();

describe('upsertContacts', () => {
  it('inserts new contacts with their default subscription and stripped data, in input order', async () => {
    const { project } = await newProject(t.app);
    const res = await up(project.id, [
      { email: 'b@example.com', patch: { plan: 'pro', gone: null }, subscribedIfNew: true },
      { email: 'a@example.com', patch: {}, subscribed: true, subscribedIfNew: false },
      { email: 'c@example.com', patch: {}, subscribedIfNew: false },
    ]);
    expect(res.map((r) => [r.row.email, r.isNew, r.row.subscribed, r.row.data])).toEqual([
      ['b@example.com', true, true, { plan: 'pro' }],
      ['a@example.com', true, true, {}],
      ['c@example.com', true, false, {}],
    ]);
  });

  it('merges data, keeps subscription unless given, and leaves unchanged contacts untouched', async () => {
    const { project } = await newProject(t.app);
    const [first] = await up(project.id, [{ email: 'x@example.com', patch: { a: 1, b: 'keep' }, subscribedIfNew: true }]);
    const same = await up(project.id, [{ email: 'x@example.com', patch: { a: 1 }, subscribedIfNew: false }]);
    expect(same[0]).toMatchObject({ isNew: false, changed: false });
    expect(same[0]?.row.updated_at.getTime()).toBe(first?.row.updated_at.getTime());
    const merged = await up(project.id, [{ email: 'x@example.com', patch: { a: 2, b: null, c: true }, subscribedIfNew: false }]);
    expect(merged[0]).toMatchObject({ isNew: false, changed: true });
    expect(merged[0]?.row.data).toEqual({ a: 2, c: true });
    expect(merged[0]?.row.subscribed).toBe(true);
  });

  it('records contact.unsubscribed / contact.subscribed exactly on changes, in the same transaction', async () => {
    const { project } = await newProject(t.app);
    const [c] = await up(project.id, [{ email: 'y@example.com', patch: {}, subscribedIfNew: true }]);
    const id = c?.row.id ?? '';
    expect(await eventsOf(id)).toEqual([]);
    await up(project.id, [{ email: 'y@example.com', patch: {}, subscribed: false, subscribedIfNew: true }]);
    await up(project.id, [{ email: 'y@example.com', patch: {}, subscribed: false, subscribedIfNew: true }]);
    await up(project.id, [{ email: 'y@example.com', patch: {}, subscribed: true, subscribedIfNew: true }]);
    expect((await eventsOf(id)).map((e) => e.name)).toEqual(['contact.unsubscribed', 'contact.subscribed']);

    // A rolled-back change leaves no event.
    await t.db.db
      .transaction()
      .execute(async (trx) => {
        await upsertContacts(trx, project.id, [{ email: 'y@example.com', patch: {}, subscribed: false, subscribedIfNew: true }]);
        throw new Error('rollback');
      })
      .catch(() => undefined);
    expect(await eventsOf(id)).toHaveLength(2);
  });

  it('creates one contact when many transactions upsert the same new email at once', async () => {
    const { project } = await newProject(t.app);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => up(project.id, [{ email: 'race@example.com', patch: { [`k${i}`]: i }, subscribedIfNew: true }])),
    );
    expect(results.filter((r) => r[0]?.isNew)).toHaveLength(1);
    const rows = await t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', project.id).execute();
    expect(rows).toHaveLength(1);
    expect(Object.keys(rows[0]?.data ?? {}).sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7']);
  });

  it('an insert racing an uncommitted insert of the same email waits for it and merges into its row', async () => {
    const { project } = await newProject(t.app);
    let release: () => void = () => undefined;
    let inserted: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const firstInserted = new Promise<void>((resolve) => (inserted = resolve));
    // The first transaction inserts the contact and stays open: the second upsert must wait on
    // the unique index entry, then update that row, never fail or insert a second one.
    const first = t.db.db.transaction().execute(async (trx) => {
      const res = await upsertContacts(trx, project.id, [{ email: 'held@example.com', patch: { a: 1 }, subscribedIfNew: true }]);
      inserted();
      await held;
      return res;
    });
    await firstInserted;
    const second = up(project.id, [{ email: 'held@example.com', patch: { b: 2 }, subscribedIfNew: true }]);
    for (let i = 0; i < 500; i++) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query ILIKE '%contacts%'`.execute(t.db.db);
      if ((rows[0]?.n ?? 0) > 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a[0]?.isNew).toBe(true);
    expect(b[0]).toMatchObject({ isNew: false, row: { id: a[0]?.row.id, data: { a: 1, b: 2 } } });
    const rows = await t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', project.id).execute();
    expect(rows).toHaveLength(1);
  });

  it('keeps contacts of projects apart', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    const [ca] = await up(a.project.id, [{ email: 'same@example.com', patch: { p: 'a' }, subscribedIfNew: true }]);
    const [cb] = await up(b.project.id, [{ email: 'same@example.com', patch: { p: 'b' }, subscribedIfNew: true }]);
    expect(ca?.row.id).not.toBe(cb?.row.id);
    expect(cb?.isNew).toBe(true);
  });
});

describe('insertEvents', () => {
  it('returns ids in input order', async () => {
    const { project } = await newProject(t.app);
    const [c] = await up(project.id, [{ email: 'e@example.com', patch: {}, subscribedIfNew: true }]);
    const contactId = c?.row.id ?? '';
    const names = Array.from({ length: 50 }, (_, i) => `ev-${i}`);
    const ids = await t.db.db.transaction().execute((trx) => insertEvents(trx, project.id, names.map((name) => ({ contactId, name, data: { i: name } }))));
    const rows = await t.db.db.selectFrom('events').select(['id', 'name']).where('contact_id', '=', contactId).execute();
    const byId = new Map(rows.map((r) => [r.id, r.name]));
    expect(ids.map((e) => byId.get(e.id))).toEqual(names);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContactData } from '../../../src/db/schema.js';
import { ApiError } from '../../../src/http/errors.js';
import { upsertContacts } from '../../../src/modules/contacts/contacts.upsert.js';
import { createTracker } from '../../../src/modules/events/track.service.js';
import { newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t?.close());

const keys = (n: number, prefix = 'k'): ContactData => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));

describe('track batches and the contact data limits', () => {
  it('refuses only the call whose contact would break a limit, in the same batch as the others (no split, no rollback)', async () => {
    const { project } = await newProject(t.app);
    await t.db.db.transaction().execute((trx) => upsertContacts(trx, project.id, [{ email: 'full@example.com', patch: keys(200), subscribedIfNew: true }]));
    const batches: number[] = [];
    const splits: number[] = [];
    const tracker = createTracker(t.db.db, {
      ttlHours: 24,
      // One batch for all the calls below: they are submitted within one turn of the event loop.
      batch: { maxWaitMs: 50, onBatch: (i) => batches.push(i.size), onBatchError: (_e, i) => splits.push(i.size) },
    });
    try {
      const calls = Array.from({ length: 10 }, (_, i) => tracker.track({ projectId: project.id, email: `ok${i}@example.com`, event: 'e', data: { n: i } }));
      const refused = tracker.track({
        projectId: project.id,
        email: 'full@example.com',
        event: 'e',
        data: { extra: 1 },
        idempotency: { key: 'full-1', method: 'POST', path: '/v1/track' },
      });
      const err = await refused.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ statusCode: 422, errors: [{ field: 'data', code: 'too_big' }] });
      expect((await Promise.all(calls)).map((r) => r.contact)).toHaveLength(10);
      expect(batches).toEqual([11]);
      expect(splits).toEqual([]);
    } finally {
      await tracker.close();
    }
    const events = await t.db.db.selectFrom('events').select('contact_id').where('project_id', '=', project.id).execute();
    expect(events).toHaveLength(10);
    const full = await t.db.db.selectFrom('contacts').select('data').where('project_id', '=', project.id).where('email', '=', 'full@example.com').executeTakeFirstOrThrow();
    expect(full.data).toEqual(keys(200));
    // The refused call's key was released in the batch's transaction.
    expect(await t.db.db.selectFrom('idempotency_keys').select('key').where('project_id', '=', project.id).execute()).toEqual([]);
  });
});

import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ProjectContext } from '../../src/http/context.js';
import { createKeyCache, startKeyCache } from '../../src/http/key-cache.js';
import { bearer, newProject, type TestProject } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/poll.js';

const project = (id: string): ProjectContext => ({ id, disabled: false, disabled_reason: null, tracking: 'ENABLED' });

describe('key cache', () => {
  it('is not used until notifications flow, and caches found keys only once they do', async () => {
    const cache = createKeyCache();
    let loads = 0;
    const load = async () => (loads++, project('p1'));
    await cache.lookup('pk_a', load);
    await cache.lookup('pk_a', load);
    expect(loads).toBe(2);
    cache.up();
    await cache.lookup('pk_a', load);
    await cache.lookup('pk_a', load);
    expect(loads).toBe(3);
    let misses = 0;
    await cache.lookup('pk_unknown', async () => (misses++, undefined));
    await cache.lookup('pk_unknown', async () => (misses++, undefined));
    expect(misses).toBe(2);
  });

  it('drops a project’s keys on invalidation, and everything when notifications stop', async () => {
    const cache = createKeyCache();
    cache.up();
    let loads = 0;
    const load = (id: string) => async () => (loads++, project(id));
    await cache.lookup('pk_a', load('p1'));
    await cache.lookup('sk_a', load('p1'));
    await cache.lookup('pk_b', load('p2'));
    expect(cache.size).toBe(3);
    cache.invalidate('p1');
    expect(cache.size).toBe(1);
    cache.down();
    expect(cache.size).toBe(0);
    await cache.lookup('pk_b', load('p2'));
    await cache.lookup('pk_b', load('p2'));
    expect(loads).toBe(5);
    expect(cache.size).toBe(0);
  });

  it('does not store what a lookup read before an invalidation that came while it ran', async () => {
    const cache = createKeyCache();
    cache.up();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const pending = cache.lookup('pk_a', async () => {
      await gate;
      return project('p1');
    });
    cache.invalidate('p1'); // e.g. the keys were rotated after the row was read
    release();
    await pending;
    expect(cache.size).toBe(0);
  });

  it('expires entries after their time to live', async () => {
    const cache = createKeyCache({ ttlMs: 20 });
    cache.up();
    let loads = 0;
    const load = async () => (loads++, project('p1'));
    await cache.lookup('pk_a', load);
    await new Promise((r) => setTimeout(r, 40));
    await cache.lookup('pk_a', load);
    expect(loads).toBe(2);
  });
});

describe('key cache kept current by the database', () => {
  let t: TestApp;
  let keys: ReturnType<typeof startKeyCache>;
  let p: TestProject;
  const silent = { warn: () => undefined, info: () => undefined };
  const probe = (app: FastifyInstance, key: string) => app.inject({ method: 'POST', url: '/__test/public', headers: bearer(key) });

  beforeAll(async () => {
    keys = startKeyCache(inject('databaseUrl'), silent);
    t = await createTestApp({
      keyCache: keys.cache,
      extend: (app) => app.post('/__test/public', { config: { auth: 'public' } }, async (request) => ({ projectId: request.project?.id })),
    });
    ({ project: p } = await newProject(t.app));
  });
  afterAll(async () => {
    await t.close();
    await keys.close();
  });

  it('answers from the cache and drops a key rotated by another process as soon as its commit is notified', async () => {
    await until('the notification connection is up', async () => {
      await probe(t.app, p.public);
      return keys.cache.size > 0;
    });
    // Another process (the CLI, another API) rotates the key: only the notification tells this one.
    await sql`UPDATE projects SET public_key = ${`pk_${'r'.repeat(40)}`} WHERE id = ${p.id}`.execute(t.db.db);
    await until('the old key is refused', async () => (await probe(t.app, p.public)).statusCode === 401, { timeoutMs: 2000 });
    expect((await probe(t.app, `pk_${'r'.repeat(40)}`)).json()).toEqual({ projectId: p.id });
  });

  it('refuses a disabled project’s key once the change is notified', async () => {
    const { project: q } = await newProject(t.app);
    expect((await probe(t.app, q.public)).statusCode).toBe(200);
    await sql`UPDATE projects SET disabled = true, disabled_reason = 'test' WHERE id = ${q.id}`.execute(t.db.db);
    await until('the disabled project is refused', async () => (await probe(t.app, q.public)).statusCode === 403, { timeoutMs: 2000 });
  });

  it('refuses the old keys at once after POST regenerate-keys in this process, before any notification', async () => {
    // A cache no notification reaches: only the route's own invalidation can drop the old key.
    const deaf = createKeyCache();
    deaf.up();
    const other = await createTestApp({
      keyCache: deaf,
      extend: (app) => app.post('/__test/public', { config: { auth: 'public' } }, async (request) => ({ projectId: request.project?.id })),
    });
    try {
      const { user: u, project: q } = await newProject(other.app);
      expect((await probe(other.app, q.public)).statusCode).toBe(200);
      expect(deaf.size).toBe(1);
      const res = await other.app.inject({ method: 'POST', url: `/users/@me/projects/${q.id}/regenerate-keys`, headers: { cookie: u.cookie } });
      expect(res.statusCode).toBe(200);
      expect((await probe(other.app, q.public)).statusCode).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('looks every key up while the notification connection is down, and caches again once it is back', async () => {
    await probe(t.app, p.secret.replace('sk_', 'pk_')); // unknown: never cached
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mailplatform-listen' AND pid <> pg_backend_pid()`.execute(t.db.db);
    await until('the cache is emptied', () => keys.cache.size === 0, { timeoutMs: 2000 });
    const { project: q } = await newProject(t.app);
    // Whether or not it reconnected yet, a change is never missed: down → uncached, up → from empty.
    expect((await probe(t.app, q.public)).statusCode).toBe(200);
    await sql`UPDATE projects SET public_key = ${`pk_${'s'.repeat(40)}`} WHERE id = ${q.id}`.execute(t.db.db);
    await until('the old key is refused', async () => (await probe(t.app, q.public)).statusCode === 401, { timeoutMs: 2000 });
    await until('caching again after reconnection', async () => {
      await probe(t.app, `pk_${'s'.repeat(40)}`);
      return keys.cache.size > 0;
    });
  });
});

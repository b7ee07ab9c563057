import argon2 from 'argon2';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { throttleKey } from '../../src/modules/accounts/login-throttle.repo.js';
import { resetPassword } from '../../src/modules/accounts/accounts.service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { signUp, uniqueEmail } from '../helpers/accounts.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const login = (email: string, password: string, app = t) => app.app.inject({ method: 'POST', url: '/auth/login', payload: { email, password } });
const rowOf = (email: string) =>
  t.db.db.selectFrom('login_throttles').selectAll().where('key', '=', throttleKey(email.toLowerCase())).executeTakeFirst();

/**
 * Logs in and checks Retry-After against the lock in the database: the server answers
 * ceil(locked_until - now) at some moment during the request, so it lies between the values at
 * the request's start and end, however long a loaded machine takes over it.
 */
async function expectRetryAfter(email: string, password: string): Promise<number> {
  const before = Date.now();
  const res = await login(email, password);
  const after = Date.now() + 1; // Date.now() truncates to the millisecond
  expect(res.statusCode, res.body).toBe(429);
  const lockedUntil = (await rowOf(email))?.locked_until?.getTime() ?? 0;
  const retry = Number(res.headers['retry-after']);
  expect(retry).toBeGreaterThanOrEqual(Math.ceil((lockedUntil - after) / 1000));
  expect(retry).toBeLessThanOrEqual(Math.ceil((lockedUntil - before) / 1000));
  return retry;
}

/** Puts an email's throttle in a given state (a long lock without making dozens of slow argon2 calls). */
async function seed(email: string, failures: number, opts: { lockedForSeconds?: number; lastFailureAgo?: string } = {}): Promise<void> {
  const lock = opts.lockedForSeconds === undefined ? null : sql<Date>`now() + make_interval(secs => ${opts.lockedForSeconds})`;
  const last = opts.lastFailureAgo ? sql<Date>`now() - ${opts.lastFailureAgo}::interval` : sql<Date>`now()`;
  await t.db.db
    .insertInto('login_throttles')
    .values({ key: throttleKey(email.toLowerCase()), failures, last_failure_at: last, locked_until: lock })
    .onConflict((oc) => oc.column('key').doUpdateSet({ failures, last_failure_at: last, locked_until: lock }))
    .execute();
}

describe('per-account sign-in throttle', () => {
  it('allows 5 failures, then locks the account: 429 with Retry-After and when to retry, even for the right password', async () => {
    const user = await signUp(t.app);
    for (let i = 1; i <= 5; i++) expect((await login(user.email, `wrong-${i}-password`)).statusCode, `failure ${i}`).toBe(401);
    expect(await rowOf(user.email)).toMatchObject({ failures: 5, locked_until: null });
    expect((await login(user.email, 'wrong-6-password')).statusCode).toBe(401);
    const row = await rowOf(user.email);
    expect(row?.failures).toBe(6);
    const lockMs = (row?.locked_until?.getTime() ?? 0) - (row?.last_failure_at.getTime() ?? 0);
    expect(lockMs).toBe(1000);
    // The sixth failure locked it for 1 s; make that long enough to observe on a loaded machine.
    await seed(user.email, 6, { lockedForSeconds: 60 });
    expect(await expectRetryAfter(user.email, user.password)).toBeLessThanOrEqual(60);
    const locked = await login(user.email, user.password);
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['set-cookie']).toBeUndefined();
    const retry = Number(locked.headers['retry-after']);
    const error = locked.json().error;
    expect(error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(error.message).toMatch(new RegExp(`try again in ${retry} seconds \\(after \\d{4}-\\d\\d-\\d\\dT`));
    expect(error.details).toMatchObject({ retryAfter: retry });
  });

  it('doubles the lock with each further failure up to 15 minutes, and forgets failures after a quiet day', async () => {
    const email = uniqueEmail();
    await seed(email, 9, { lockedForSeconds: -1 }); // a lock that has just ended
    expect((await login(email, 'wrong-password')).statusCode).toBe(401); // 10th failure: 2^4 s
    let row = await rowOf(email);
    expect((row?.locked_until?.getTime() ?? 0) - (row?.last_failure_at.getTime() ?? 0)).toBe(16_000);
    expect(await expectRetryAfter(email, 'wrong-password')).toBeLessThanOrEqual(16);

    await seed(email, 40, { lockedForSeconds: -1 });
    expect((await login(email, 'wrong-password')).statusCode).toBe(401);
    row = await rowOf(email);
    expect((row?.locked_until?.getTime() ?? 0) - (row?.last_failure_at.getTime() ?? 0)).toBe(900_000);
    expect(await expectRetryAfter(email, 'wrong-password')).toBeLessThanOrEqual(900);

    await seed(email, 40, { lockedForSeconds: -1, lastFailureAgo: '25 hours' });
    expect((await login(email, 'wrong-password')).statusCode).toBe(401);
    expect((await rowOf(email))?.failures).toBe(1);
    expect((await rowOf(email))?.locked_until).toBeNull();
  });

  it('checks the lock before any password hashing', async () => {
    const user = await signUp(t.app);
    await seed(user.email, 20, { lockedForSeconds: 600 });
    const verify = vi.spyOn(argon2, 'verify');
    try {
      for (let i = 0; i < 3; i++) expect((await login(user.email, user.password)).statusCode).toBe(429);
      expect(verify).not.toHaveBeenCalled();
    } finally {
      verify.mockRestore();
    }
  });

  it('throttles an address without an account exactly like one with an account, storing only a hash', async () => {
    const user = await signUp(t.app);
    const nobody = uniqueEmail('nobody');
    const answers = async (email: string) => {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await login(email, 'wrong-password')).statusCode);
      await seed(email, 6, { lockedForSeconds: 30 });
      const locked = await login(email, 'wrong-password');
      return { statuses, status: locked.statusCode, message: locked.json().error.message.replace(/\d+/g, 'N') };
    };
    const ofNobody = await answers(nobody);
    expect(ofNobody).toMatchObject({ statuses: [401, 401, 401, 401, 401, 401], status: 429 });
    expect(await answers(user.email)).toEqual(ofNobody);
    const rows = await t.db.db
      .selectFrom('login_throttles')
      .select(sql<string>`to_jsonb(login_throttles)::text`.as('text'))
      .where('key', '=', throttleKey(nobody))
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.text).not.toContain(nobody);
  });

  it('resets on success, and writes nothing for a first-try success', async () => {
    const user = await signUp(t.app);
    expect((await login(user.email, user.password)).statusCode).toBe(200);
    expect(await rowOf(user.email)).toBeUndefined();
    for (let i = 0; i < 3; i++) expect((await login(user.email, 'wrong-password')).statusCode).toBe(401);
    expect((await rowOf(user.email))?.failures).toBe(3);
    expect((await login(user.email.toUpperCase(), user.password)).statusCode).toBe(200);
    expect(await rowOf(user.email)).toBeUndefined();
  });

  it('verifies one attempt at a time per account, so a parallel burst cannot pass the check together', async () => {
    const user = await signUp(t.app);
    await seed(user.email, 14); // the next failure locks for 2^8 s
    const statuses = await Promise.all(Array.from({ length: 12 }, () => login(user.email, 'wrong-password').then((r) => r.statusCode)));
    expect(statuses.filter((s) => s === 401)).toHaveLength(1);
    expect(statuses.filter((s) => s === 429)).toHaveLength(11);
  });

  it('is shared by API processes through the database', async () => {
    const other = await createTestApp();
    try {
      const user = await signUp(t.app);
      await seed(user.email, 14);
      expect((await login(user.email, 'wrong-password')).statusCode).toBe(401);
      expect((await login(user.email, user.password, other)).statusCode).toBe(429);
    } finally {
      await other.close();
    }
  });

  it("ends with an operator's password reset", async () => {
    const user = await signUp(t.app);
    await seed(user.email, 20, { lockedForSeconds: 600 });
    await resetPassword(t.db.db, user.email, 'a-new-long-password');
    expect((await login(user.email, 'a-new-long-password')).statusCode).toBe(200);
  });
});

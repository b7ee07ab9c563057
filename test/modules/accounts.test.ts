import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { sessionCookie, signUp, uniqueEmail } from '../helpers/accounts.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const noHash = (body: string) => expect(body).not.toMatch(/argon2|password/i);

describe('accounts', () => {
  it('signs up with 201, sets an HttpOnly SameSite=Lax session cookie, and returns the user without a hash', async () => {
    const email = uniqueEmail();
    const res = await t.app.inject({ method: 'POST', url: '/auth/signup', payload: { email, password: 'longenough' } });
    expect(res.statusCode).toBe(201);
    const user = res.json();
    // Without SMTP_URL the instance cannot send a link: users are created verified.
    expect(user).toMatchObject({ email, emailVerified: true });
    expect(user.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Object.keys(user).sort()).toEqual(['createdAt', 'email', 'emailVerified', 'id', 'isAdmin', 'updatedAt']);
    noHash(res.body);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^session=/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Max-Age=604800/);
    expect(cookie).not.toMatch(/Secure/);
    const row = await t.db.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
  });

  it('rejects a short password and a bad email with 422 field errors', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: 'nope', password: 'short' } });
    expect(res.statusCode).toBe(422);
    const body = res.json();
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.message).toBe('Request validation failed');
    expect(body.error.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'email', code: 'invalid_string' }),
        expect.objectContaining({ field: 'password', code: 'too_small' }),
      ]),
    );
  });

  it('treats emails case-insensitively: a second signup with other case changes nothing, login works with any case', async () => {
    const email = uniqueEmail('Mixed');
    await signUp(t.app, email, 'password-one');
    const dup = await t.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: email.toUpperCase(), password: 'password-two' } });
    expect(dup.statusCode).toBe(201);
    expect(dup.headers['set-cookie']).toBeUndefined();
    const rows = await t.db.db.selectFrom('users').select('id').where('email', '=', email.toLowerCase()).execute();
    expect(rows).toHaveLength(1);
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: email.toUpperCase(), password: 'password-one' } });
    expect(login.statusCode).toBe(200);
    expect(login.json().email).toBe(email.toLowerCase());
    noHash(login.body);
    const second = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email, password: 'password-two' } });
    expect(second.statusCode).toBe(401);
  });

  it('answers signup for a taken address with the same status and body shape as for a new one, without a session', async () => {
    const taken = await signUp(t.app);
    const fresh = await t.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: uniqueEmail(), password: 'longenough' } });
    const again = await t.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: taken.email, password: 'longenough' } });
    expect(again.statusCode).toBe(fresh.statusCode);
    const [a, b] = [fresh.json(), again.json()];
    expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
    for (const key of Object.keys(a)) expect(typeof b[key], key).toBe(typeof a[key]);
    expect(b).toMatchObject({ email: taken.email, isAdmin: false, emailVerified: a.emailVerified });
    // The id looks like a real one (time-ordered v7) but is nobody's: the real id is not revealed.
    expect(b.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(b.id).not.toBe(taken.id);
    expect(again.headers['set-cookie']).toBeUndefined();
    const me = await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: taken.cookie } });
    expect(me.json().id).toBe(taken.id);
  });

  it('refuses a wrong password or unknown email with the same 401', async () => {
    const user = await signUp(t.app);
    const wrong = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'not-it-at-all' } });
    const unknown = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: uniqueEmail(), password: 'whatever1' } });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json().error.message).toBe(unknown.json().error.message);
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('returns the signed-in user at /users/@me and 401 without or after logout', async () => {
    const user = await signUp(t.app);
    const me = await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ id: user.id, email: user.email });
    noHash(me.body);

    const anon = await t.app.inject({ method: 'GET', url: '/users/@me' });
    expect(anon.statusCode).toBe(401);
    expect(anon.json().error.code).toBe('UNAUTHORIZED');

    const tampered = await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: `${user.cookie}x` } });
    expect(tampered.statusCode).toBe(401);

    const out = await t.app.inject({ method: 'GET', url: '/auth/logout', headers: { cookie: user.cookie } });
    expect(out.statusCode).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/^session=;.*Expires=Thu, 01 Jan 1970/);
    // The session ended server-side: the old cookie value no longer works.
    const after = await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } });
    expect(after.statusCode).toBe(401);
  });

  it('logs out with POST too, ending only that session, on account and resource routes', async () => {
    const user = await signUp(t.app);
    const project = await t.app.inject({ method: 'POST', url: '/users/@me/projects', headers: { cookie: user.cookie }, payload: { name: 'P' } });
    const projectId = project.json().id;
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } });
    const other = sessionCookie(login.headers['set-cookie']);

    const out = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: user.cookie } });
    expect(out.statusCode).toBe(200);
    expect(out.json()).toEqual({ success: true });
    expect(String(out.headers['set-cookie'])).toMatch(/^session=;/);
    expect((await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } })).statusCode).toBe(401);
    const resource = await t.app.inject({ method: 'GET', url: '/contacts', headers: { cookie: user.cookie, 'x-project-id': projectId } });
    expect(resource.statusCode).toBe(403);

    // The user's other session (another browser) is still signed in.
    expect((await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: other } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/contacts', headers: { cookie: other, 'x-project-id': projectId } })).statusCode).toBe(200);
    // Logging out again, or without a session, still answers 200 and clears the cookie.
    expect((await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: user.cookie } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: '/auth/logout' })).statusCode).toBe(200);
  });

  it('does not accept an API key on account routes', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/users/@me', headers: { authorization: 'Bearer sk_whatever' } });
    expect(res.statusCode).toBe(401);
  });

  it('refuses signup with 403 when SIGNUP_ENABLED=false, and says so in /config', async () => {
    const closed = await createTestApp({ env: { SIGNUP_ENABLED: 'false' } });
    try {
      const res = await closed.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: uniqueEmail(), password: 'longenough' } });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN');
      const cfg = await closed.app.inject({ method: 'GET', url: '/config' });
      expect(cfg.json()).toMatchObject({ signupEnabled: false, oauthProviders: [], billingEnabled: false, maxProjectSendingRate: null });
    } finally {
      await closed.close();
    }
  });

  it('marks the session cookie Secure when PUBLIC_URL is https', async () => {
    const secure = await createTestApp({ env: { PUBLIC_URL: 'https://mail.example.com' } });
    try {
      const res = await secure.app.inject({ method: 'POST', url: '/auth/signup', payload: { email: uniqueEmail(), password: 'longenough' } });
      expect(String(res.headers['set-cookie'])).toMatch(/Secure/);
      expect(sessionCookie(res.headers['set-cookie'])).toMatch(/^session=ey/);
    } finally {
      await secure.close();
    }
  });
});

describe('sessions after a password reset', () => {
  it('refuses every session issued before the reset, on account and resource routes', async () => {
    const { resetPassword } = await import('../../src/modules/accounts/accounts.service.js');
    const user = await signUp(t.app);
    const project = await t.app.inject({ method: 'POST', url: '/users/@me/projects', headers: { cookie: user.cookie }, payload: { name: 'P' } });
    const projectId = project.json().id;
    await resetPassword(t.db.db, user.email, 'a-brand-new-password');
    const me = await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } });
    expect(me.statusCode).toBe(401);
    const list = await t.app.inject({ method: 'GET', url: '/users/@me/projects', headers: { cookie: user.cookie } });
    expect(list.statusCode).toBe(401);
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'a-brand-new-password' } });
    expect(login.statusCode).toBe(200);
    const fresh = sessionCookie(login.headers['set-cookie']);
    const again = await t.app.inject({ method: 'GET', url: `/users/@me/projects/${projectId}`, headers: { cookie: fresh } });
    expect(again.statusCode).toBe(200);
  });
});

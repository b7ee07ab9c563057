import { createHash } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../../helpers/app.js';
import { signUp, uniqueEmail } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { type FakeOAuthProvider, startFakeOAuthProvider } from '../../helpers/fake-oauth-provider.js';
import { callback, consent, cookieOf, newAccount, oauthApp, type OAuthTestApp, redirectError, signInWith, startFlow } from './oauth-harness.js';

let github: FakeOAuthProvider;
let google: FakeOAuthProvider;
let t: OAuthTestApp;
beforeAll(async () => {
  github = await startFakeOAuthProvider('github');
  google = await startFakeOAuthProvider('google');
  t = await oauthApp([github, google]);
});
afterAll(async () => {
  await t?.close();
  await github?.close();
  await google?.close();
});

const me = (cookie: string) => t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie } });
const usersWithEmail = (email: string) => t.db.db.selectFrom('users').selectAll().where('email', '=', email).execute();
const identitiesOf = (userId: string) => t.db.db.selectFrom('oauth_identities').selectAll().where('user_id', '=', userId).execute();

describe('OAuth sign-in', () => {
  it.each(['github', 'google'] as const)('%s: signs up a new account through the provider, verified, and signs in with the session cookie', async (name) => {
    const fake = name === 'github' ? github : google;
    const account = newAccount(name);
    const flow = await startFlow(t.app, name);
    // The redirect to the provider: this client, our callback, S256 PKCE, the state, the scopes.
    expect(`${flow.authorizeUrl.origin}${flow.authorizeUrl.pathname}`).toBe(fake.endpoints.authorize);
    const q = flow.authorizeUrl.searchParams;
    expect(q.get('client_id')).toBe(fake.clientId);
    expect(q.get('redirect_uri')).toBe(`http://localhost:8080/auth/oauth/${name}/callback`);
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('state')).toMatch(/^[\w-]{20,}$/);
    expect(q.get('scope')).toBe(name === 'github' ? 'read:user user:email' : 'openid email');

    fake.consentAs(account);
    const res = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie]);
    expect(res.statusCode, res.body).toBe(302);
    expect(res.headers.location).toBe('http://localhost:8080/app');
    const session = cookieOf(res, 'session');
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    // The state cookie serves one callback.
    expect(cookieOf(res, 'oauth_state')).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/);
    expect(flow.stateCookieAttributes).toMatch(/Max-Age=600;.*Path=\/auth\/oauth;.*HttpOnly;.*SameSite=Lax/);

    const user = await me(session?.split(';')[0] ?? '');
    expect(user.statusCode).toBe(200);
    expect(user.json()).toMatchObject({ email: account.email, emailVerified: true });
    const [row] = await usersWithEmail(account.email);
    expect(row?.password_hash).toBeNull();
    expect(await identitiesOf(user.json().id)).toEqual([
      expect.objectContaining({ provider: name, provider_user_id: account.id, email: account.email }),
    ]);
    // No password: the address cannot sign in with one.
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: account.email, password: 'anything-at-all' } });
    expect(login.statusCode).toBe(401);
  });

  it('maps repeated sign-ins of one provider account to the same user, also after its email changed at the provider', async () => {
    const account = newAccount('github');
    const first = await signInWith(t.app, github, account);
    const second = await signInWith(t.app, github, account);
    const third = await signInWith(t.app, github, { ...account, email: uniqueEmail('renamed') });
    const ids = await Promise.all([first, second, third].map(async (s) => (await me(s.session ?? '')).json().id));
    expect(new Set(ids).size).toBe(1);
    expect(await usersWithEmail(account.email)).toHaveLength(1);
    const [identity] = await identitiesOf(ids[0]);
    expect(identity?.email).toMatch(/^renamed-/);
    // The account's own address is not changed by the provider's.
    expect((await me(third.session ?? '')).json().email).toBe(account.email);
  });

  it('refuses a callback whose state differs from the cookie: no code exchanged, no session, no account', async () => {
    const account = newAccount('github');
    github.consentAs(account);
    const flow = await startFlow(t.app, 'github');
    const path = (await consent(flow.authorizeUrl)).replace(/state=[^&]+/, 'state=forged-state-value');
    const before = github.exchanges;
    const res = await callback(t.app, path, [flow.stateCookie]);
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('http://localhost:8080/app/login?error=oauth_state_mismatch');
    expect(cookieOf(res, 'session')).toBeUndefined();
    expect(github.exchanges).toBe(before);
    expect(await usersWithEmail(account.email)).toHaveLength(0);
    // An API client (JSON, not a page) gets the envelope instead.
    const again = await startFlow(t.app, 'github');
    const json = await callback(t.app, (await consent(again.authorizeUrl)).replace(/state=[^&]+/, 'state=x'), [again.stateCookie], { accept: 'application/json' });
    const error = expectEnvelope(json, 400, 'OAUTH_STATE_MISMATCH');
    expect(error.details).toEqual({ reason: 'oauth_state_mismatch' });
  });

  it('refuses a callback without the state cookie (expired, blocked or started elsewhere), and a forged cookie', async () => {
    const account = newAccount('google');
    google.consentAs(account);
    const flow = await startFlow(t.app, 'google');
    const path = await consent(flow.authorizeUrl);
    const none = await callback(t.app, path, []);
    expect(redirectError(none)).toBe('oauth_state_missing');
    const forged = await callback(t.app, path, [`${flow.stateCookie.slice(0, -4)}AAAA`]);
    expect(redirectError(forged)).toBe('oauth_state_missing');
    // The state cookie of the other provider's flow does not serve this one.
    const other = await startFlow(t.app, 'github');
    expect(redirectError(await callback(t.app, path, [other.stateCookie]))).toBe('oauth_state_missing');
    expect(await usersWithEmail(account.email)).toHaveLength(0);
  });

  it('refuses an expired state cookie (10 minutes) that is otherwise the genuine one', async () => {
    const account = newAccount('github');
    github.consentAs(account);
    const flow = await startFlow(t.app, 'github');
    const path = await consent(flow.authorizeUrl);
    const claims = decodeJwt(flow.stateCookie.slice('oauth_state='.length));
    expect(claims.exp).toBe((claims.iat ?? 0) + 600);
    // The same claims signed with the same key, issued 11 minutes ago: expired.
    const key = createHash('sha256').update(`oauth-state:${TEST_SECRET}`).digest();
    const now = Math.floor(Date.now() / 1000);
    const resign = (iat: number) => new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt(iat).setExpirationTime(iat + 600).sign(key);
    const expired = await callback(t.app, path, [`oauth_state=${await resign(now - 660)}`]);
    expect(redirectError(expired)).toBe('oauth_state_missing');
    // Control: issued 9 minutes ago, it still works (nothing else differs).
    const fresh = await callback(t.app, path, [`oauth_state=${await resign(now - 540)}`]);
    expect(fresh.headers.location).toBe('http://localhost:8080/app');
  });

  it('sends the PKCE verifier: a code issued to another flow is refused by the provider (invalid_grant)', async () => {
    const account = newAccount('google');
    google.consentAs(account);
    // The attacker's flow gets a code bound to the attacker's challenge …
    const stolen = new URL(await consent((await startFlow(t.app, 'google')).authorizeUrl), 'http://x').searchParams.get('code');
    // … and injects it into the victim's flow, whose state and cookie are genuine.
    const victim = await startFlow(t.app, 'google');
    const state = victim.authorizeUrl.searchParams.get('state') ?? '';
    const refusalsBefore = google.refusals.length;
    const res = await callback(t.app, `/auth/oauth/google/callback?code=${stolen}&state=${state}`, [victim.stateCookie]);
    expect(redirectError(res)).toBe('oauth_provider_error');
    expect(google.refusals.slice(refusalsBefore)).toEqual(['invalid_grant']);
    expect(cookieOf(res, 'session')).toBeUndefined();
    expect(await usersWithEmail(account.email)).toHaveLength(0);
  });

  it('redirects a declined consent to the login page with oauth_denied', async () => {
    github.consentAs('deny');
    const flow = await startFlow(t.app, 'github');
    const res = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie]);
    expect(res.headers.location).toBe('http://localhost:8080/app/login?error=oauth_denied');
    expect(cookieOf(res, 'session')).toBeUndefined();
  });

  it('does not let a provider account take over an existing password account with its email', async () => {
    const owner = await signUp(t.app);
    const account = newAccount('github', { email: owner.email, emailVerified: true });
    const refused = await signInWith(t.app, github, account);
    expect(refused.res.headers.location).toBe('http://localhost:8080/app/login?error=oauth_account_exists');
    expect(refused.session).toBeUndefined();
    expect(await identitiesOf(owner.id)).toEqual([]);
    // The owner signs in with the password and links GitHub from there; from then on GitHub signs in to the same account.
    github.consentAs(account);
    const flow = await startFlow(t.app, 'github', { link: owner.cookie });
    const linked = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie, owner.cookie]);
    expect(linked.headers.location).toBe('http://localhost:8080/app/settings?linked=github');
    const after = await signInWith(t.app, github, account);
    expect((await me(after.session ?? '')).json().id).toBe(owner.id);
  });

  it('refuses linking a provider account that signs in to another user, and a second account of one provider', async () => {
    const taken = newAccount('google');
    await signInWith(t.app, google, taken);
    const user = await signUp(t.app);
    google.consentAs(taken);
    const flow = await startFlow(t.app, 'google', { link: user.cookie });
    const res = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie, user.cookie]);
    expect(res.headers.location).toBe('http://localhost:8080/app/settings?error=oauth_identity_taken');

    const mine = newAccount('google');
    google.consentAs(mine);
    const first = await startFlow(t.app, 'google', { link: user.cookie });
    await callback(t.app, await consent(first.authorizeUrl), [first.stateCookie, user.cookie]);
    google.consentAs(newAccount('google'));
    const second = await startFlow(t.app, 'google', { link: user.cookie });
    const again = await callback(t.app, await consent(second.authorizeUrl), [second.stateCookie, user.cookie]);
    expect(redirectError(again)).toBe('oauth_already_linked');
    expect(await identitiesOf(user.id)).toEqual([expect.objectContaining({ provider_user_id: mine.id })]);
  });

  it('needs a session to link, and the same live session at the callback', async () => {
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/auth/oauth/github/link' }), 401, 'UNAUTHORIZED');
    const user = await signUp(t.app);
    github.consentAs(newAccount('github'));
    const flow = await startFlow(t.app, 'github', { link: user.cookie });
    await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: user.cookie } });
    const res = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie, user.cookie]);
    expect(redirectError(res)).toBe('oauth_session_ended');
    expect(await identitiesOf(user.id)).toEqual([]);
  });

  it('answers 404 in the envelope for an unknown provider', async () => {
    for (const url of ['/auth/oauth/gitlab', '/auth/oauth/gitlab/callback?code=x&state=y']) {
      expectEnvelope(await t.app.inject({ method: 'GET', url }), 404, 'NOT_FOUND');
    }
  });
});

describe('OAuth configuration', () => {
  it('lists exactly the configured providers in /config and /auth/oauth-config; an unconfigured one is 404', async () => {
    const cases = [
      { fakes: [], ids: [] },
      { fakes: [github], ids: ['github'] },
      { fakes: [google], ids: ['google'] },
      { fakes: [github, google], ids: ['github', 'google'] },
    ];
    for (const c of cases) {
      const a = await oauthApp(c.fakes);
      try {
        expect((await a.app.inject({ method: 'GET', url: '/config' })).json().oauthProviders).toEqual(c.ids);
        const listed = (await a.app.inject({ method: 'GET', url: '/auth/oauth-config' })).json();
        expect(listed.providers.map((p: { id: string }) => p.id)).toEqual(c.ids);
        for (const name of ['github', 'google'].filter((n) => !c.ids.includes(n))) {
          expectEnvelope(await a.app.inject({ method: 'GET', url: `/auth/oauth/${name}` }), 404, 'NOT_FOUND');
          expectEnvelope(await a.app.inject({ method: 'GET', url: `/auth/oauth/${name}/callback?code=a&state=b` }), 404, 'NOT_FOUND');
        }
      } finally {
        await a.close();
      }
    }
    expect((await t.app.inject({ method: 'GET', url: '/auth/oauth-config' })).json()).toEqual({
      providers: [
        { id: 'github', name: 'GitHub', url: '/auth/oauth/github' },
        { id: 'google', name: 'Google', url: '/auth/oauth/google' },
      ],
    });
  });

  it('SIGNUP_ENABLED=false blocks sign-up through a provider; linked accounts still sign in', async () => {
    const existing = newAccount('github');
    const signedUp = await signInWith(t.app, github, existing);
    const closed = await oauthApp([github], { SIGNUP_ENABLED: 'false' });
    try {
      const stranger = newAccount('github');
      const refused = await signInWith(closed.app, github, stranger);
      expect(refused.res.headers.location).toBe('http://localhost:8080/app/login?error=oauth_signup_disabled');
      expect(refused.session).toBeUndefined();
      expect(await usersWithEmail(stranger.email)).toHaveLength(0);
      const again = await signInWith(closed.app, github, existing);
      expect(again.res.headers.location).toBe('http://localhost:8080/app');
      expect((await me(again.session ?? '')).json().id).toBe((await me(signedUp.session ?? '')).json().id);
    } finally {
      await closed.close();
    }
  });

  it('a wrong client secret is refused by the provider (invalid_client): a clear provider error', async () => {
    const wrong = await oauthApp([github], { GITHUB_CLIENT_SECRET: 'not-the-secret' });
    try {
      const before = github.refusals.length;
      const res = await signInWith(wrong.app, github, newAccount('github'));
      expect(redirectError(res.res)).toBe('oauth_provider_error');
      expect(github.refusals.slice(before)).toEqual(['invalid_client']);
    } finally {
      await wrong.close();
    }
  });

  it('refuses sign-up with an address the provider did not verify; linking one to a signed-in account works', async () => {
    const unverified = newAccount('google', { emailVerified: false });
    const refused = await signInWith(t.app, google, unverified);
    expect(refused.res.headers.location).toBe('http://localhost:8080/app/login?error=oauth_email_unverified');
    expect(refused.session).toBeUndefined();
    expect(await usersWithEmail(unverified.email)).toHaveLength(0);
    // The signed-in owner proves the link; the provider account then signs in to that account.
    const owner = await signUp(t.app);
    google.consentAs(unverified);
    const flow = await startFlow(t.app, 'google', { link: owner.cookie });
    const linked = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie, owner.cookie]);
    expect(linked.headers.location).toBe('http://localhost:8080/app/settings?linked=google');
    expect((await me((await signInWith(t.app, google, unverified)).session ?? '')).json().id).toBe(owner.id);
  });
});

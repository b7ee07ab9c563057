import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUp } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { until } from '../../helpers/poll.js';
import { type FakeOAuthProvider, startFakeOAuthProvider } from '../../helpers/fake-oauth-provider.js';
import { callback, consent, newAccount, oauthApp, type OAuthTestApp, signInWith, startFlow } from './oauth-harness.js';

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

const list = (cookie: string) => t.app.inject({ method: 'GET', url: '/users/@me/oauth-identities', headers: { cookie } });
const unlink = (cookie: string, provider: string) =>
  t.app.inject({ method: 'DELETE', url: `/users/@me/oauth-identities/${provider}`, headers: { cookie } });

async function link(fake: FakeOAuthProvider, cookie: string) {
  fake.consentAs(newAccount(fake.flavor));
  const flow = await startFlow(t.app, fake.flavor, { link: cookie });
  const res = await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie, cookie]);
  expect(res.headers.location).toBe(`http://localhost:8080/app/settings?linked=${fake.flavor}`);
}

describe('linked sign-in providers', () => {
  it('lists the providers linked to the signed-in account', async () => {
    const user = await signUp(t.app);
    expect((await list(user.cookie)).json()).toEqual([]);
    await link(github, user.cookie);
    await link(google, user.cookie);
    const res = await list(user.cookie);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([
      { provider: 'github', email: expect.stringMatching(/^github-/), linkedAt: expect.any(String), lastSignInAt: expect.any(String) },
      { provider: 'google', email: expect.stringMatching(/^google-/), linkedAt: expect.any(String), lastSignInAt: expect.any(String) },
    ]);
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/users/@me/oauth-identities' }), 401, 'UNAUTHORIZED');
  });

  it('unlinks a provider of an account with a password; the provider account no longer signs in to it', async () => {
    const user = await signUp(t.app);
    const account = newAccount('github');
    github.consentAs(account);
    const flow = await startFlow(t.app, 'github', { link: user.cookie });
    await callback(t.app, await consent(flow.authorizeUrl), [flow.stateCookie, user.cookie]);
    expect((await unlink(user.cookie, 'github')).statusCode).toBe(204);
    expect((await list(user.cookie)).json()).toEqual([]);
    expectEnvelope(await unlink(user.cookie, 'github'), 404, 'NOT_FOUND');
    expectEnvelope(await unlink(user.cookie, 'gitlab'), 404, 'NOT_FOUND');
    // Its email is the account's: signing in with it now is the refused takeover.
    const again = await signInWith(t.app, github, { ...account, email: user.email });
    expect(new URL(String(again.res.headers.location)).searchParams.get('error')).toBe('oauth_account_exists');
  });

  it('refuses to unlink the last way to sign in (no password, no other provider), also when two unlinks race', async () => {
    const only = await signInWith(t.app, github, newAccount('github'));
    const cookie = only.session ?? '';
    const refused = await unlink(cookie, 'github');
    expectEnvelope(refused, 409, 'CONFLICT');
    expect((await list(cookie)).json()).toHaveLength(1);

    // Two providers, no password: unlinking both at once leaves one. The test holds the rows
    // until both unlinks wait for them, so both start from the same state.
    await link(google, cookie);
    const userId = (await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie } })).json().id;
    const holder = await t.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM oauth_identities WHERE user_id = $1 FOR UPDATE', [userId]);
      const racing = Promise.all([unlink(cookie, 'github'), unlink(cookie, 'google')]);
      await until('both unlinks waiting for the identity rows', async () => {
        const { rows } = await t.db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%oauth_identities%' AND pid <> pg_backend_pid()`,
        );
        return (rows[0]?.n ?? 0) >= 2;
      });
      await holder.query('COMMIT');
      const answers = await racing;
      expect(answers.map((a) => a.statusCode).sort()).toEqual([204, 409]);
    } finally {
      holder.release();
    }
    expect((await list(cookie)).json()).toHaveLength(1);
  });

  it('two callbacks racing for one new provider account create one user and sign both in to it', async () => {
    const account = newAccount('google');
    google.consentAs(account);
    const flows = await Promise.all([startFlow(t.app, 'google'), startFlow(t.app, 'google')]);
    const paths = await Promise.all(flows.map((f) => consent(f.authorizeUrl)));
    const [a, b] = await Promise.all(flows.map((f, i) => callback(t.app, paths[i] ?? '', [f.stateCookie])));
    expect([a?.headers.location, b?.headers.location]).toEqual(['http://localhost:8080/app', 'http://localhost:8080/app']);
    const users = await t.db.db.selectFrom('users').select('id').where('email', '=', account.email).execute();
    expect(users).toHaveLength(1);
  });
});

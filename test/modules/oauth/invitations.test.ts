import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, signUp, uniqueEmail } from '../../helpers/accounts.js';
import { type FakeOAuthProvider, startFakeOAuthProvider } from '../../helpers/fake-oauth-provider.js';
import { newAccount, oauthApp, type OAuthTestApp, signInWith } from './oauth-harness.js';

let github: FakeOAuthProvider;
let t: OAuthTestApp;
beforeAll(async () => {
  github = await startFakeOAuthProvider('github');
  t = await oauthApp([github]);
});
afterAll(async () => {
  await t?.close();
  await github?.close();
});

async function invite(email: string) {
  const owner = await signUp(t.app);
  const project = await createProject(t.app, owner, 'Invited to');
  const res = await t.app.inject({ method: 'POST', url: `/projects/${project.id}/members`, headers: { cookie: owner.cookie }, payload: { email, role: 'MEMBER' } });
  expect(res.statusCode, res.body).toBeLessThan(300);
  return project;
}

const projectIdsOf = async (cookie: string) =>
  (await t.app.inject({ method: 'GET', url: '/users/@me/projects', headers: { cookie } })).json<{ id: string }[]>().map((p) => p.id);

describe('pending invitations on OAuth sign-in', () => {
  it('are accepted when the provider verified the address, as after a password sign-in', async () => {
    const email = uniqueEmail('invited');
    const project = await invite(email);
    const res = await signInWith(t.app, github, newAccount('github', { email, emailVerified: true }));
    expect(res.res.headers.location).toBe('http://localhost:8080/app');
    expect(await projectIdsOf(res.session ?? '')).toEqual([project.id]);
  });

  it('are accepted on the next sign-in of a linked provider account', async () => {
    const account = newAccount('github');
    await signInWith(t.app, github, account);
    const project = await invite(account.email);
    const again = await signInWith(t.app, github, account);
    expect(await projectIdsOf(again.session ?? '')).toContain(project.id);
  });
});

import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { inject } from 'vitest';
import { expect } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { createAppDeps } from '../../../src/app-deps.js';
import { connect, type Db } from '../../../src/db/connection.js';
import { memoryStore } from '../../../src/http/rate-limit.js';
import { testConfig } from '../../helpers/app.js';
import { uniqueEmail } from '../../helpers/accounts.js';
import type { FakeAccount, FakeOAuthProvider } from '../../helpers/fake-oauth-provider.js';

export interface OAuthTestApp {
  app: FastifyInstance;
  db: Db;
  close(): Promise<void>;
}

/** The real app with the given fake providers configured (their ids and secrets as the variables) and their endpoints injected. */
export async function oauthApp(fakes: FakeOAuthProvider[], env: Record<string, string> = {}): Promise<OAuthTestApp> {
  const vars: Record<string, string> = { ...env };
  for (const f of fakes) {
    const prefix = f.flavor.toUpperCase();
    vars[`${prefix}_CLIENT_ID`] = f.clientId;
    vars[`${prefix}_CLIENT_SECRET`] ??= f.clientSecret;
  }
  const config = testConfig(vars);
  const db = connect(inject('databaseUrl'), { max: 4 });
  const app = await buildApp(createAppDeps(config, db.db), {
    rateLimitStore: memoryStore(),
    oauthEndpoints: Object.fromEntries(fakes.map((f) => [f.flavor, f.endpoints])),
  });
  await app.ready();
  return {
    app,
    db,
    async close() {
      await app.close();
      await db.close();
    },
  };
}

/** The `name=value` pair of one cookie a response set (undefined when it set none of that name). */
export function cookieOf(res: LightMyRequestResponse, name: string): string | undefined {
  const all = res.headers['set-cookie'];
  const list = Array.isArray(all) ? all : all ? [all] : [];
  return list.find((c) => c.startsWith(`${name}=`));
}

const pair = (setCookie: string | undefined) => setCookie?.split(';')[0] ?? '';

export interface StartedFlow {
  /** Where the start route sent the browser (the fake's /authorize). */
  authorizeUrl: URL;
  /** The `oauth_state=…` cookie pair. */
  stateCookie: string;
  /** The whole Set-Cookie of it (attributes). */
  stateCookieAttributes: string;
}

export async function startFlow(app: FastifyInstance, provider: string, opts: { link?: string } = {}): Promise<StartedFlow> {
  const res = await app.inject({
    method: 'GET',
    url: opts.link ? `/auth/oauth/${provider}/link` : `/auth/oauth/${provider}`,
    headers: opts.link ? { cookie: opts.link } : {},
  });
  expect(res.statusCode, res.body).toBe(302);
  const stateCookieAttributes = cookieOf(res, 'oauth_state') ?? '';
  const stateCookie = pair(stateCookieAttributes);
  expect(stateCookie).toMatch(/^oauth_state=./);
  return { authorizeUrl: new URL(String(res.headers.location)), stateCookie, stateCookieAttributes };
}

/** The browser at the fake provider: follows /authorize once and returns the callback's path and query. */
export async function consent(authorizeUrl: URL): Promise<string> {
  const res = await fetch(authorizeUrl, { redirect: 'manual' });
  expect(res.status).toBe(302);
  const back = new URL(String(res.headers.get('location')));
  return `${back.pathname}${back.search}`;
}

export function callback(app: FastifyInstance, path: string, cookies: string[], headers: Record<string, string> = {}) {
  return app.inject({ method: 'GET', url: path, headers: { cookie: cookies.filter(Boolean).join('; '), ...headers } });
}

export interface SignInOutcome {
  res: LightMyRequestResponse;
  /** The `session=…` pair when the callback signed in. */
  session: string | undefined;
}

/** A whole browser sign-in: start, consent at the fake as `account`, callback with the state cookie. */
export async function signInWith(app: FastifyInstance, fake: FakeOAuthProvider, account: FakeAccount): Promise<SignInOutcome> {
  fake.consentAs(account);
  const flow = await startFlow(app, fake.flavor);
  const res = await callback(app, await consent(flow.authorizeUrl), [flow.stateCookie]);
  const session = cookieOf(res, 'session');
  return { res, session: session && !/Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(session) ? pair(session) : undefined };
}

/** A fresh provider account: GitHub ids are numbers, Google's `sub` strings. */
export function newAccount(flavor: 'github' | 'google', overrides: Partial<FakeAccount> = {}): FakeAccount {
  const id = flavor === 'github' ? String(randomBytes(5).readUIntBE(0, 5) + 1) : `g-${randomBytes(8).toString('hex')}`;
  return { id, email: uniqueEmail(flavor), emailVerified: true, ...overrides };
}

/** The redirect's `error` parameter (or undefined when it carries none). */
export const redirectError = (res: LightMyRequestResponse): string | null => new URL(String(res.headers.location)).searchParams.get('error');

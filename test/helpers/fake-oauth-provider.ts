import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthEndpoints } from '../../src/modules/oauth/index.js';

/** Who "signs in" at the fake provider's consent page next. */
export interface FakeAccount {
  id: string;
  email: string;
  emailVerified: boolean;
}

export interface FakeOAuthProvider {
  readonly flavor: 'github' | 'google';
  readonly clientId: string;
  readonly clientSecret: string;
  /** The endpoints to hand the app (BuildAppOptions.oauthEndpoints). */
  readonly endpoints: OAuthEndpoints;
  /** The account the next authorizations consent as; `deny` answers `error=access_denied` instead. */
  consentAs(account: FakeAccount | 'deny'): void;
  /** Token requests refused, with the OAuth error code the fake answered (invalid_grant, invalid_client, …). */
  readonly refusals: string[];
  /** Codes exchanged successfully. */
  readonly exchanges: number;
  close(): Promise<void>;
}

interface IssuedCode {
  account: FakeAccount;
  clientId: string;
  redirectUri: string;
  challenge: string;
  used: boolean;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * A real OAuth 2.0 authorization server on 127.0.0.1 speaking GitHub's or Google's dialect:
 * `/authorize` consents at once as the configured account and redirects back with a code
 * (or access_denied); `/token` checks the client credentials (HTTP Basic), the code (single
 * use, issued to this client and redirect URI) and the PKCE verifier against the S256
 * challenge; the profile endpoints answer for the access token. GitHub answers token errors
 * with 200 and an `error` field (as GitHub does), Google with 400.
 */
export async function startFakeOAuthProvider(flavor: 'github' | 'google'): Promise<FakeOAuthProvider> {
  const clientId = `${flavor}-client-${randomBytes(4).toString('hex')}`;
  const clientSecret = `${flavor}-secret-${randomBytes(8).toString('hex')}`;
  const codes = new Map<string, IssuedCode>();
  const tokens = new Map<string, FakeAccount>();
  const refusals: string[] = [];
  let exchanges = 0;
  let consent: FakeAccount | 'deny' = 'deny';

  const refuse = (res: ServerResponse, error: string) => {
    refusals.push(error);
    json(res, flavor === 'github' ? 200 : error === 'invalid_client' ? 401 : 400, { error, error_description: `fake provider: ${error}` });
  };

  function authorize(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    const redirectUri = q.get('redirect_uri') ?? '';
    const back = new URL(redirectUri);
    back.searchParams.set('state', q.get('state') ?? '');
    if (q.get('client_id') !== clientId || q.get('response_type') !== 'code') return json(res, 400, { error: 'invalid_request' });
    if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return json(res, 400, { error: 'pkce_required' });
    if (consent === 'deny') {
      back.searchParams.set('error', 'access_denied');
    } else {
      const code = randomBytes(16).toString('hex');
      codes.set(code, { account: consent, clientId, redirectUri, challenge: q.get('code_challenge') ?? '', used: false });
      back.searchParams.set('code', code);
    }
    res.writeHead(302, { location: back.toString() }).end();
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = new URLSearchParams(await readBody(req));
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [id, secret] = Buffer.from(basic ?? '', 'base64').toString('utf8').split(':');
    if (id !== clientId || secret !== clientSecret) return refuse(res, 'invalid_client');
    const issued = codes.get(form.get('code') ?? '');
    if (form.get('grant_type') !== 'authorization_code' || !issued || issued.used) return refuse(res, 'invalid_grant');
    if (issued.redirectUri !== form.get('redirect_uri')) return refuse(res, 'invalid_grant');
    if (s256(form.get('code_verifier') ?? '') !== issued.challenge) return refuse(res, 'invalid_grant');
    issued.used = true;
    exchanges += 1;
    const accessToken = randomBytes(16).toString('hex');
    tokens.set(accessToken, issued.account);
    json(res, 200, { access_token: accessToken, token_type: 'bearer', scope: flavor === 'github' ? 'read:user,user:email' : 'openid email' });
  }

  function profile(path: string, req: IncomingMessage, res: ServerResponse): void {
    const account = tokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (!account) return json(res, 401, { message: 'Bad credentials' });
    if (path === '/user') return json(res, 200, { id: Number(account.id), login: `user${account.id}`, email: null });
    if (path === '/user/emails') {
      return json(res, 200, [
        { email: `noreply-${account.id}@users.noreply.example`, primary: false, verified: true, visibility: null },
        { email: account.email, primary: true, verified: account.emailVerified, visibility: 'private' },
      ]);
    }
    json(res, 200, { sub: account.id, email: account.email, email_verified: account.emailVerified });
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/authorize') return authorize(url, res);
    if (req.method === 'POST' && url.pathname === '/token') return void token(req, res).catch(() => json(res, 500, {}));
    if (req.method === 'GET' && ['/user', '/user/emails', '/userinfo'].includes(url.pathname)) return profile(url.pathname, req, res);
    json(res, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const endpoints: OAuthEndpoints =
    flavor === 'github'
      ? { authorize: `${base}/authorize`, token: `${base}/token`, userInfo: `${base}/user`, emails: `${base}/user/emails` }
      : { authorize: `${base}/authorize`, token: `${base}/token`, userInfo: `${base}/userinfo` };

  return {
    flavor,
    clientId,
    clientSecret,
    endpoints,
    consentAs(account) {
      consent = account;
    },
    refusals,
    get exchanges() {
      return exchanges;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

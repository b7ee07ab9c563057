import { CodeChallengeMethod, OAuth2Client, type OAuth2Tokens } from 'arctic';
import type { OAuthClients } from '../../config.js';
import type { OAuthProviderName } from '../../db/schema.js';
import { OAuthFlowError } from './oauth.errors.js';

/** Where a provider's OAuth and profile endpoints are. */
export interface OAuthEndpoints {
  authorize: string;
  token: string;
  /** GitHub: the user (`/user`); Google: OpenID Connect userinfo. */
  userInfo: string;
  /** GitHub only: the user's addresses with their verified flags (`/user/emails`). */
  emails?: string;
}

/**
 * Endpoint overrides per provider, for tests against a fake provider on loopback only: passed
 * to `buildApp` in code (BuildAppOptions.oauthEndpoints), never read from the environment.
 */
export type OAuthEndpointOverrides = Partial<Record<OAuthProviderName, OAuthEndpoints>>;

/** What sign-in needs from the provider: its stable account id and its primary address. */
export interface ProviderProfile {
  providerUserId: string;
  email: string;
  /** The provider says it verified the address. */
  emailVerified: boolean;
}

export interface OAuthProvider {
  name: OAuthProviderName;
  label: string;
  authorizationUrl(state: string, codeVerifier: string): URL;
  /** Exchanges the code (with the PKCE verifier) and reads the profile; OAuthFlowError on provider failures. */
  profile(code: string, codeVerifier: string): Promise<ProviderProfile>;
}

const DEFAULT_ENDPOINTS: Record<OAuthProviderName, OAuthEndpoints> = {
  github: {
    authorize: 'https://github.com/login/oauth/authorize',
    token: 'https://github.com/login/oauth/access_token',
    userInfo: 'https://api.github.com/user',
    emails: 'https://api.github.com/user/emails',
  },
  google: {
    authorize: 'https://accounts.google.com/o/oauth2/v2/auth',
    token: 'https://oauth2.googleapis.com/token',
    userInfo: 'https://openidconnect.googleapis.com/v1/userinfo',
  },
};

const SCOPES: Record<OAuthProviderName, string[]> = {
  github: ['read:user', 'user:email'],
  google: ['openid', 'email'],
};

export const PROVIDER_LABELS: Record<OAuthProviderName, string> = { github: 'GitHub', google: 'Google' };

/** Each provider call (token exchange, profile) must answer within this. */
const PROVIDER_TIMEOUT_MS = 10_000;

const providerError = (label: string, why: string, cause?: unknown) =>
  new OAuthFlowError('oauth_provider_error', `${label} sign-in failed: ${why}`, { cause });

async function withTimeout<T>(label: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(providerError(label, `no answer within ${PROVIDER_TIMEOUT_MS / 1000} s`)), PROVIDER_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The access token of a token answer; GitHub answers some errors with 200 and an `error` field. */
function accessTokenOf(label: string, tokens: OAuth2Tokens): string {
  const data: Record<string, unknown> = { ...tokens.data };
  if (typeof data.error === 'string') throw providerError(label, `the code was refused (${data.error})`);
  if (typeof data.access_token !== 'string') throw providerError(label, 'the token answer has no access token');
  return data.access_token;
}

async function getJson(label: string, url: string, accessToken: string): Promise<unknown> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'user-agent': 'mailplatform-oauth' },
    signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
  }).catch((err: unknown) => {
    throw providerError(label, 'its API could not be reached', err);
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw providerError(label, `its API answered ${res.status}`);
  }
  return res.json().catch((err: unknown) => {
    throw providerError(label, 'its API answered something that is not JSON', err);
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** GitHub: the account id from /user, the primary address and its verified flag from /user/emails. */
async function githubProfile(endpoints: OAuthEndpoints, accessToken: string): Promise<ProviderProfile> {
  const user = await getJson('GitHub', endpoints.userInfo, accessToken);
  if (!isRecord(user) || (typeof user.id !== 'number' && typeof user.id !== 'string')) throw providerError('GitHub', 'the user has no id');
  if (!endpoints.emails) throw providerError('GitHub', 'no emails endpoint is configured');
  const emails = await getJson('GitHub', endpoints.emails, accessToken);
  const primary = Array.isArray(emails) ? emails.filter(isRecord).find((e) => e.primary === true && typeof e.email === 'string') : undefined;
  if (!primary) throw new OAuthFlowError('oauth_no_email', 'Your GitHub account has no primary email address to sign in with');
  return { providerUserId: String(user.id), email: String(primary.email).toLowerCase(), emailVerified: primary.verified === true };
}

/** Google: OpenID Connect userinfo (`sub`, `email`, `email_verified`). */
async function googleProfile(endpoints: OAuthEndpoints, accessToken: string): Promise<ProviderProfile> {
  const info = await getJson('Google', endpoints.userInfo, accessToken);
  if (!isRecord(info) || typeof info.sub !== 'string') throw providerError('Google', 'the profile has no subject');
  if (typeof info.email !== 'string') throw new OAuthFlowError('oauth_no_email', 'Your Google account shared no email address');
  return { providerUserId: info.sub, email: info.email.toLowerCase(), emailVerified: info.email_verified === true };
}

const PROFILES = { github: githubProfile, google: googleProfile } as const;

function createProvider(name: OAuthProviderName, client: OAuth2Client, endpoints: OAuthEndpoints): OAuthProvider {
  const label = PROVIDER_LABELS[name];
  return {
    name,
    label,
    authorizationUrl: (state, codeVerifier) =>
      client.createAuthorizationURLWithPKCE(endpoints.authorize, state, CodeChallengeMethod.S256, codeVerifier, SCOPES[name]),
    async profile(code, codeVerifier) {
      const tokens = await withTimeout(label, client.validateAuthorizationCode(endpoints.token, code, codeVerifier)).catch((err: unknown) => {
        if (err instanceof OAuthFlowError) throw err;
        const reason = isRecord(err) && typeof err.code === 'string' ? `the code was refused (${err.code})` : 'the code could not be exchanged';
        throw providerError(label, reason, err);
      });
      return withTimeout(label, PROFILES[name](endpoints, accessTokenOf(label, tokens)));
    },
  };
}

/**
 * The configured providers (both client id and secret set), by name. The redirect URI is
 * `<PUBLIC_URL>/auth/oauth/<provider>/callback`: register exactly that with the provider.
 */
export function configuredProviders(
  clients: OAuthClients,
  publicUrl: string,
  overrides: OAuthEndpointOverrides = {},
): Map<OAuthProviderName, OAuthProvider> {
  const providers = new Map<OAuthProviderName, OAuthProvider>();
  for (const name of ['github', 'google'] as const) {
    const creds = clients[name];
    if (!creds) continue;
    const client = new OAuth2Client(creds.clientId, creds.clientSecret, callbackUrl(publicUrl, name));
    providers.set(name, createProvider(name, client, overrides[name] ?? DEFAULT_ENDPOINTS[name]));
  }
  return providers;
}

export const callbackUrl = (publicUrl: string, provider: OAuthProviderName): string => `${publicUrl}/auth/oauth/${provider}/callback`;

import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { createTestApp } from './helpers/app.js';

const dir = mkdtempSync(path.join(tmpdir(), 'config-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const base = { DATA_DIR: dir, SECRET: 's'.repeat(32) };

describe('config', () => {
  it('applies the DESIGN §3 defaults', () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      publicUrl: 'http://localhost:8080',
      role: 'all',
      databaseUrl: undefined,
      smtpUrl: undefined,
      dnsServers: [],
      signupEnabled: true,
      redisUrl: undefined,
      rateLimitPerMinute: 1000,
      signinRateLimitPerMinute: 30,
      idempotencyTtlHours: 24,
      bodyTimeoutSeconds: 30,
      uploadTimeoutSeconds: 120,
      snsVerify: true,
      snsTopicArns: [],
      webhookAllowPrivate: false,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ ROLE: 'both' }, /ROLE/],
    [{ SIGNUP_ENABLED: 'maybe' }, /SIGNUP_ENABLED/],
    [{ RATE_LIMIT_PER_MINUTE: '0' }, /RATE_LIMIT_PER_MINUTE/],
    [{ SIGNIN_RATE_LIMIT_PER_MINUTE: '0' }, /SIGNIN_RATE_LIMIT_PER_MINUTE/],
    [{ IDEMPOTENCY_TTL_HOURS: '1.5' }, /IDEMPOTENCY_TTL_HOURS/],
    [{ BODY_TIMEOUT_SECONDS: '0' }, /BODY_TIMEOUT_SECONDS/],
    [{ UPLOAD_TIMEOUT_SECONDS: 'soon' }, /UPLOAD_TIMEOUT_SECONDS/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ SMTP_URL: 'not a url' }, /SMTP_URL/],
    [{ PUBLIC_URL: 'ftp://x' }, /PUBLIC_URL/],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL/],
    [{ DNS_SERVERS: '1.1.1.1,bad server' }, /DNS_SERVERS/],
    [{ SECRET: 'short' }, /SECRET/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ SNS_VERIFY: 'sometimes' }, /SNS_VERIFY/],
    [{ SNS_TOPIC_ARNS: 'not-an-arn' }, /SNS_TOPIC_ARNS/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'intranet' }, /WEBHOOK_ALLOW_PRIVATE/],
    [{ AUTO_DISABLE_PROJECTS: 'perhaps' }, /AUTO_DISABLE_PROJECTS/],
    [{ SYSTEM_FROM: 'not an address' }, /SYSTEM_FROM/],
  ])('fails fast naming the variable: %o', (env, name) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(name);
  });

  it('parses every variable', () => {
    const c = loadConfig({
      ...base,
      PORT: '9000',
      HOST: '0.0.0.0',
      PUBLIC_URL: 'https://mail.example.com/',
      DATABASE_URL: 'postgres://u:p@db:5432/x',
      ROLE: 'worker',
      SMTP_URL: 'smtps://u:p@smtp.example.com:465',
      DNS_SERVERS: '127.0.0.1:5353, [::1]:53,dns.example.com',
      SIGNUP_ENABLED: 'false',
      REDIS_URL: 'redis://localhost:6379',
      RATE_LIMIT_PER_MINUTE: '50',
      SIGNIN_RATE_LIMIT_PER_MINUTE: '7',
      IDEMPOTENCY_TTL_HOURS: '48',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      AUTO_DISABLE_PROJECTS: 'false',
    });
    expect(c).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      publicUrl: 'https://mail.example.com',
      role: 'worker',
      dnsServers: ['127.0.0.1:5353', '[::1]:53', 'dns.example.com'],
      signupEnabled: false,
      rateLimitPerMinute: 50,
      signinRateLimitPerMinute: 7,
      idempotencyTtlHours: 48,
      webhookAllowPrivate: true,
      autoDisableProjects: false,
      systemFrom: 'no-reply@mail.example.com',
    });
    expect(loadConfig(base).autoDisableProjects).toBe(true);
  });

  it('generates SECRET once into DATA_DIR and reuses it', () => {
    const own = path.join(dir, 'gen');
    const first = loadConfig({ DATA_DIR: own }).secret;
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(loadConfig({ DATA_DIR: own }).secret).toBe(first);
    expect(readFileSync(path.join(own, 'secret'), 'utf8').trim()).toBe(first);
    expect(statSync(path.join(own, 'secret')).mode & 0o777).toBe(0o600);
  });

  it('names DATA_DIR when it cannot be written', () => {
    expect(() => loadConfig({ DATA_DIR: '/proc/not-writable' })).toThrow(/DATA_DIR/);
  });
});

const STRIPE = { STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x', STRIPE_PRICE_ID: 'price_x' };

describe('billing configuration', () => {
  it('is off without STRIPE_SECRET_KEY, whatever else is set', () => {
    expect(loadConfig({ ...base, STRIPE_WEBHOOK_SECRET: 'whsec_x', STRIPE_PRICE_ID: 'price_x' }).billing).toBeUndefined();
    expect(loadConfig({ ...base, ...STRIPE, STRIPE_SECRET_KEY: ' ' }).billing).toBeUndefined();
  });

  it('with STRIPE_SECRET_KEY needs the webhook secret and the price, naming the one missing', () => {
    expect(() => loadConfig({ ...base, ...STRIPE, STRIPE_WEBHOOK_SECRET: '' })).toThrow(/STRIPE_WEBHOOK_SECRET/);
    expect(() => loadConfig({ ...base, ...STRIPE, STRIPE_PRICE_ID: '' })).toThrow(/STRIPE_PRICE_ID/);
  });

  it('reads the settings, the free allowance defaulting to 1,000 emails a month', () => {
    expect(loadConfig({ ...base, ...STRIPE }).billing).toEqual({ secretKey: 'sk_test_x', webhookSecret: 'whsec_x', priceId: 'price_x', apiUrl: undefined, freeEmailsPerMonth: 1000 });
    const c = loadConfig({ ...base, ...STRIPE, BILLING_FREE_EMAILS_PER_MONTH: '0', STRIPE_API_URL: 'http://127.0.0.1:12111' });
    expect(c.billing).toMatchObject({ freeEmailsPerMonth: 0, apiUrl: 'http://127.0.0.1:12111' });
  });

  it('names a bad BILLING_FREE_EMAILS_PER_MONTH or STRIPE_API_URL', () => {
    expect(() => loadConfig({ ...base, ...STRIPE, BILLING_FREE_EMAILS_PER_MONTH: 'lots' })).toThrow(/BILLING_FREE_EMAILS_PER_MONTH/);
    expect(() => loadConfig({ ...base, ...STRIPE, STRIPE_API_URL: 'ftp://stripe.example' })).toThrow(/STRIPE_API_URL/);
  });

  it('GET /config says billingEnabled only when billing is on', async () => {
    for (const [env, enabled] of [[{}, false], [STRIPE, true]] as const) {
      const t = await createTestApp({ env });
      try {
        const res = await t.app.inject({ method: 'GET', url: '/config' });
        expect(res.json<{ billingEnabled: boolean }>().billingEnabled).toBe(enabled);
      } finally {
        await t.close();
      }
    }
  });
});

describe('OAuth sign-in configuration', () => {
  const GITHUB = { GITHUB_CLIENT_ID: 'gh-id', GITHUB_CLIENT_SECRET: 'gh-secret' };
  const GOOGLE = { GOOGLE_CLIENT_ID: 'g-id', GOOGLE_CLIENT_SECRET: 'g-secret' };

  it('configures a provider only with both its id and secret', () => {
    expect(loadConfig(base).oauth).toEqual({});
    expect(loadConfig({ ...base, ...GITHUB }).oauth).toEqual({ github: { clientId: 'gh-id', clientSecret: 'gh-secret' } });
    expect(loadConfig({ ...base, ...GITHUB, ...GOOGLE }).oauth).toEqual({
      github: { clientId: 'gh-id', clientSecret: 'gh-secret' },
      google: { clientId: 'g-id', clientSecret: 'g-secret' },
    });
  });

  it.each([
    [{ GITHUB_CLIENT_ID: 'gh-id' }, /GITHUB_CLIENT_SECRET/],
    [{ GITHUB_CLIENT_SECRET: 'gh-secret' }, /GITHUB_CLIENT_ID/],
    [{ GOOGLE_CLIENT_ID: 'g-id', GOOGLE_CLIENT_SECRET: ' ' }, /GOOGLE_CLIENT_SECRET/],
    [{ GOOGLE_CLIENT_SECRET: 'g-secret' }, /GOOGLE_CLIENT_ID/],
  ])('fails fast naming the missing half of a provider: %o', (env, name) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(name);
  });
});

describe('config: project sending rates', () => {
  it('leaves both unset by default (unlimited, no cap) and reads decimals', () => {
    expect(loadConfig(base)).toMatchObject({ projectSendingRate: undefined, maxProjectSendingRate: undefined });
    expect(loadConfig({ ...base, PROJECT_SENDING_RATE: '2.5', MAX_PROJECT_SENDING_RATE: '100' })).toMatchObject({
      projectSendingRate: 2.5,
      maxProjectSendingRate: 100,
    });
  });

  it.each([
    [{ PROJECT_SENDING_RATE: '0' }, /PROJECT_SENDING_RATE/],
    [{ PROJECT_SENDING_RATE: 'fast' }, /PROJECT_SENDING_RATE/],
    [{ MAX_PROJECT_SENDING_RATE: '-1' }, /MAX_PROJECT_SENDING_RATE/],
    [{ MAX_PROJECT_SENDING_RATE: '1e3' }, /MAX_PROJECT_SENDING_RATE/],
  ])('fails fast naming the variable: %o', (env, name) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(name);
  });
});

describe('config: metrics', () => {
  it('leaves METRICS_TOKEN and METRICS_PORT unset by default and reads them', () => {
    expect(loadConfig(base)).toMatchObject({ metricsToken: undefined, metricsPort: undefined });
    expect(loadConfig({ ...base, METRICS_TOKEN: 'a'.repeat(16), METRICS_PORT: '9464' })).toMatchObject({ metricsToken: 'a'.repeat(16), metricsPort: 9464 });
    // A worker has no API port to collide with.
    expect(loadConfig({ ...base, ROLE: 'worker', METRICS_PORT: '8080' }).metricsPort).toBe(8080);
  });

  it.each([
    [{ METRICS_TOKEN: 'short' }, /^METRICS_TOKEN must be at least 16 visible ASCII characters/],
    [{ METRICS_TOKEN: 'with a space in the token' }, /^METRICS_TOKEN must be/],
    [{ METRICS_PORT: 'nine' }, /^METRICS_PORT must be a whole number/],
    [{ METRICS_PORT: '70000' }, /^METRICS_PORT must be between 0 and 65535/],
    [{ METRICS_PORT: '8080' }, /^METRICS_PORT must differ from PORT \(8080\)/],
    [{ METRICS_PORT: '2525', INBOUND_SMTP_PORT: '2525', BOUNCE_DOMAIN: 'bounces.example.com' }, /^METRICS_PORT must differ from INBOUND_SMTP_PORT/],
  ])('fails fast with one line naming the variable: %o', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });
});

describe('config: SHUTDOWN_DELAY_SECONDS', () => {
  it('is 0 by default and read as seconds', () => {
    expect(loadConfig(base).shutdownDelaySeconds).toBe(0);
    expect(loadConfig({ ...base, SHUTDOWN_DELAY_SECONDS: '5' }).shutdownDelaySeconds).toBe(5);
  });

  it.each([
    [{ SHUTDOWN_DELAY_SECONDS: 'soon' }, /^SHUTDOWN_DELAY_SECONDS must be a whole number/],
    [{ SHUTDOWN_DELAY_SECONDS: '301' }, /^SHUTDOWN_DELAY_SECONDS must be between 0 and 300/],
  ])('fails fast with one line naming the variable: %o', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });
});

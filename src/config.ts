import { createPublicKey, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** Raised when the environment is invalid; the message names the variable. */
export class ConfigError extends Error {}

const bool = (name: string, fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return fallback;
      const s = v.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(s)) return true;
      if (['false', '0', 'no', 'off'].includes(s)) return false;
      ctx.addIssue({ code: 'custom', message: `${name} must be true or false` });
      return z.NEVER;
    });

const int = (name: string, fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return fallback;
      if (!/^\d+$/.test(v.trim())) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a whole number, got "${v}"` });
        return z.NEVER;
      }
      const n = Number(v.trim());
      if (n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `${name} must be between ${min} and ${max}, got ${n}` });
        return z.NEVER;
      }
      return n;
    });

/** A positive number (decimals allowed) up to `max`, or undefined when unset. */
const positive = (name: string, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const n = Number(v.trim());
      if (!/^\d+(\.\d+)?$/.test(v.trim()) || n <= 0 || n > max) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a number above 0 and at most ${max}, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

const url = (name: string, protocols: string[]) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return undefined;
      let parsed: URL;
      try {
        parsed = new URL(v);
      } catch {
        ctx.addIssue({ code: 'custom', message: `${name} is not a valid URL` });
        return z.NEVER;
      }
      if (!protocols.includes(parsed.protocol)) {
        ctx.addIssue({ code: 'custom', message: `${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}` });
        return z.NEVER;
      }
      return v;
    });

const envSchema = z.object({
  PORT: int('PORT', 8080, 0, 65535),
  HOST: z.string().optional().default('127.0.0.1'),
  PUBLIC_URL: url('PUBLIC_URL', ['http:', 'https:']),
  DATA_DIR: z.string().optional().default('./data'),
  DATABASE_URL: url('DATABASE_URL', ['postgres:', 'postgresql:']),
  ROLE: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const role = (v ?? 'all').trim() || 'all';
      if (role === 'all' || role === 'api' || role === 'worker') return role;
      ctx.addIssue({ code: 'custom', message: `ROLE must be all, api or worker, got "${v}"` });
      return z.NEVER;
    }),
  SMTP_URL: url('SMTP_URL', ['smtp:', 'smtps:']),
  DNS_SERVERS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (!v) return [];
      const servers = v.split(',').map((s) => s.trim()).filter(Boolean);
      for (const s of servers) {
        if (!/^(\[[0-9a-fA-F:]+\]|[0-9a-zA-Z.:-]+)(:\d{1,5})?$/.test(s)) {
          ctx.addIssue({ code: 'custom', message: `DNS_SERVERS has an invalid entry "${s}" (expected host[:port])` });
          return z.NEVER;
        }
      }
      return servers;
    }),
  SECRET: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || v.length >= 32, 'SECRET must be at least 32 characters'),
  SIGNUP_ENABLED: bool('SIGNUP_ENABLED', true),
  SYSTEM_FROM: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return undefined;
      const address = v.trim().toLowerCase();
      if (!z.email().safeParse(address).success) {
        ctx.addIssue({ code: 'custom', message: `SYSTEM_FROM must be one email address (e.g. no-reply@example.com), got "${v}"` });
        return z.NEVER;
      }
      return address;
    }),
  REDIS_URL: url('REDIS_URL', ['redis:', 'rediss:']),
  RATE_LIMIT_PER_MINUTE: int('RATE_LIMIT_PER_MINUTE', 1000, 1, 10_000_000),
  SIGNIN_RATE_LIMIT_PER_MINUTE: int('SIGNIN_RATE_LIMIT_PER_MINUTE', 30, 1, 10_000_000),
  IDEMPOTENCY_TTL_HOURS: int('IDEMPOTENCY_TTL_HOURS', 24, 1, 24 * 365),
  BODY_TIMEOUT_SECONDS: int('BODY_TIMEOUT_SECONDS', 30, 1, 3600),
  UPLOAD_TIMEOUT_SECONDS: int('UPLOAD_TIMEOUT_SECONDS', 120, 1, 3600),
  SNS_VERIFY: bool('SNS_VERIFY', true),
  AUTO_DISABLE_PROJECTS: bool('AUTO_DISABLE_PROJECTS', true),
  WEBHOOK_ALLOW_PRIVATE: bool('WEBHOOK_ALLOW_PRIVATE', false),
  PROJECT_SENDING_RATE: positive('PROJECT_SENDING_RATE', 1_000_000),
  MAX_PROJECT_SENDING_RATE: positive('MAX_PROJECT_SENDING_RATE', 1_000_000),
  SNS_TOPIC_ARNS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const arns = (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      const bad = arns.find((a) => !/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]+$/.test(a));
      if (bad) {
        ctx.addIssue({ code: 'custom', message: `SNS_TOPIC_ARNS has an invalid topic ARN "${bad}"` });
        return z.NEVER;
      }
      return arns;
    }),
  POSTMARK_WEBHOOK_USER: z.string().optional(),
  POSTMARK_WEBHOOK_PASSWORD: z.string().optional(),
  POSTMARK_WEBHOOK_HEADER: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (!v?.trim()) return undefined;
      const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(\S.*?)\s*$/.exec(v);
      if (!match?.[1] || !match[2] || match[2].length < 16) {
        ctx.addIssue({ code: 'custom', message: 'POSTMARK_WEBHOOK_HEADER must be "Name: value" with a value of at least 16 characters (a custom header set on the Postmark webhook)' });
        return z.NEVER;
      }
      return { name: match[1].toLowerCase(), value: match[2] };
    }),
  MAILGUN_WEBHOOK_SIGNING_KEY: z.string().optional(),
  SENDGRID_WEBHOOK_PUBLIC_KEY: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const key = v?.trim();
      if (!key) return undefined;
      try {
        createPublicKey({ key: Buffer.from(key, 'base64'), format: 'der', type: 'spki' });
      } catch {
        ctx.addIssue({ code: 'custom', message: 'SENDGRID_WEBHOOK_PUBLIC_KEY must be the verification key SendGrid shows (base64 DER public key)' });
        return z.NEVER;
      }
      return key;
    }),
  RESEND_WEBHOOK_SECRET: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const secret = v?.trim();
      if (!secret) return undefined;
      if (!/^whsec_[A-Za-z0-9+/]+=*$/.test(secret)) {
        ctx.addIssue({ code: 'custom', message: 'RESEND_WEBHOOK_SECRET must be the signing secret Resend shows (whsec_ followed by base64)' });
        return z.NEVER;
      }
      return secret;
    }),
  GITHUB_CLIENT_ID: z.string().optional(),
  GITHUB_CLIENT_SECRET: z.string().optional(),
  GOOGLE_CLIENT_ID: z.string().optional(),
  GOOGLE_CLIENT_SECRET: z.string().optional(),
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const level = v || 'info';
      if (['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(level)) return level;
      ctx.addIssue({ code: 'custom', message: `LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent` });
      return z.NEVER;
    }),
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_PRICE_ID: z.string().optional(),
  STRIPE_API_URL: url('STRIPE_API_URL', ['http:', 'https:']),
  BILLING_FREE_EMAILS_PER_MONTH: int('BILLING_FREE_EMAILS_PER_MONTH', 1000, 0, 1_000_000_000),
  UPLOAD_QUOTA_MB: positive('UPLOAD_QUOTA_MB', 10_000_000),
  S3_BUCKET: z.string().optional(),
  S3_REGION: z.string().optional(),
  S3_ENDPOINT: url('S3_ENDPOINT', ['http:', 'https:']),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_FORCE_PATH_STYLE: bool('S3_FORCE_PATH_STYLE', false),
  DASHBOARD_DIST: z.string().optional(),
  BOUNCE_DOMAIN: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const domain = v?.trim().toLowerCase().replace(/\.$/, '');
      if (!domain) return undefined;
      if (!/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/.test(domain)) {
        ctx.addIssue({ code: 'custom', message: `BOUNCE_DOMAIN must be a domain name (e.g. bounces.example.com), got "${v}"` });
        return z.NEVER;
      }
      return domain;
    }),
  INBOUND_SMTP_PORT: int('INBOUND_SMTP_PORT', 0, 0, 65535),
  INBOUND_SMTP_HOST: z.string().optional().default('0.0.0.0'),
  INBOUND_SMTP_TLS_CERT: z.string().optional(),
  INBOUND_SMTP_TLS_KEY: z.string().optional(),
  INBOUND_SMTP_MAX_SIZE_MB: positive('INBOUND_SMTP_MAX_SIZE_MB', 100),
  INBOUND_SMTP_MESSAGES_PER_MINUTE: int('INBOUND_SMTP_MESSAGES_PER_MINUTE', 600, 1, 10_000_000),
  INBOUND_SMTP_CONNECTIONS_PER_MINUTE: int('INBOUND_SMTP_CONNECTIONS_PER_MINUTE', 120, 1, 10_000_000),
  INBOUND_STORE_ATTACHMENTS: bool('INBOUND_STORE_ATTACHMENTS', false),
  METRICS_TOKEN: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return undefined;
      // Sent as `Authorization: Bearer <token>`: visible ASCII only, and long enough not to be guessed.
      if (!/^[\x21-\x7e]{16,}$/.test(v)) {
        ctx.addIssue({ code: 'custom', message: 'METRICS_TOKEN must be at least 16 visible ASCII characters with no spaces (e.g. openssl rand -hex 32)' });
        return z.NEVER;
      }
      return v;
    }),
  METRICS_PORT: int('METRICS_PORT', 0, 0, 65535),
  SHUTDOWN_DELAY_SECONDS: int('SHUTDOWN_DELAY_SECONDS', 0, 0, 300),
});

export type Role = 'all' | 'api' | 'worker';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly publicUrl: string;
  readonly dataDir: string;
  /** Unset means: start an embedded PostgreSQL under DATA_DIR. */
  readonly databaseUrl: string | undefined;
  readonly role: Role;
  readonly smtpUrl: string | undefined;
  readonly dnsServers: readonly string[];
  /** Signs sessions and tokens. Generated once into DATA_DIR when unset. */
  readonly secret: string;
  readonly signupEnabled: boolean;
  /** From of the instance's own account emails (SYSTEM_FROM). Default `no-reply@<host of PUBLIC_URL>`. */
  readonly systemFrom: string;
  /** Stripe billing (src/modules/billing/); undefined when STRIPE_SECRET_KEY is unset: billing off, no caps. */
  readonly billing: BillingConfig | undefined;
  readonly redisUrl: string | undefined;
  readonly rateLimitPerMinute: number;
  /** POST /auth/login and /auth/signup per client address (each costs an argon2 hash). */
  readonly signinRateLimitPerMinute: number;
  readonly idempotencyTtlHours: number;
  /** A request body (JSON, forms) must arrive within this; else 408 (src/http/body-timeout.ts). */
  readonly bodyTimeoutSeconds: number;
  /** The same for file uploads (POST /contacts/import up to 5 MB, POST /uploads/image up to 10 MB). */
  readonly uploadTimeoutSeconds: number;
  /** Require valid SNS signatures on /webhooks/notifications. Default true. */
  readonly snsVerify: boolean;
  /** A critical deliverability level disables the project (AUTO_DISABLE_PROJECTS, default true; docs/security.md). */
  readonly autoDisableProjects: boolean;
  /** Accept notifications only from these SNS topics; empty means any topic. */
  readonly snsTopicArns: readonly string[];
  /**
   * Secrets of the relay providers' webhooks on /webhooks/notifications (docs/bounces.md,
   * Provider webhooks); a provider whose secret is unset is refused.
   */
  readonly providerWebhooks: ProviderWebhookSecrets;
  /** Let workflow WEBHOOK steps and webhook endpoints call private, loopback and link-local addresses. Default false. */
  readonly webhookAllowPrivate: boolean;
  /** Emails per second of a project without its own `sendingRate` (PROJECT_SENDING_RATE); undefined: unlimited. */
  readonly projectSendingRate: number | undefined;
  /** The operator's cap on every project's rate (MAX_PROJECT_SENDING_RATE); undefined: none. */
  readonly maxProjectSendingRate: number | undefined;
  readonly logLevel: string;
  /** OAuth sign-in clients; a provider is present only when both its id and secret are set. */
  readonly oauth: OAuthClients;
  /** Image uploads (src/modules/uploads, docs/uploads.md): quota and storage. */
  readonly uploads: UploadsConfig;
  /** The built dashboard served at /app (DASHBOARD_DIST, default web/dist of this checkout). */
  readonly dashboardDist: string | undefined;
  /** VERP return paths on this domain (BOUNCE_DOMAIN, docs/bounces.md); undefined: the envelope sender is the From. */
  readonly bounceDomain: string | undefined;
  /** The inbound SMTP receiver of bounces and complaints (INBOUND_SMTP_PORT); undefined: off. */
  readonly inboundSmtp: InboundSmtpConfig | undefined;
  /** Bearer token GET /metrics requires (METRICS_TOKEN); undefined: loopback clients only (docs/operations.md "Metrics and health"). */
  readonly metricsToken: string | undefined;
  /** A second listener on HOST for /metrics and /health/* (METRICS_PORT, any role); undefined: none. */
  readonly metricsPort: number | undefined;
  /** Seconds between SIGTERM and closing the API's port, /health/ready answering 503 meanwhile (SHUTDOWN_DELAY_SECONDS). */
  readonly shutdownDelaySeconds: number;
}

/** The inbound SMTP receiver (src/modules/bounces, docs/bounces.md). */
export interface InboundSmtpConfig {
  readonly port: number;
  /** INBOUND_SMTP_HOST, default 0.0.0.0 (MX traffic comes from anywhere). */
  readonly host: string;
  /** STARTTLS certificate and key files (PEM), both set or neither. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** INBOUND_SMTP_MAX_SIZE_MB, default 10. */
  readonly maxSizeBytes: number;
  /** Per remote address: INBOUND_SMTP_MESSAGES_PER_MINUTE (600) and INBOUND_SMTP_CONNECTIONS_PER_MINUTE (120). */
  readonly messagesPerMinute: number;
  readonly connectionsPerMinute: number;
  /** INBOUND_STORE_ATTACHMENTS (default false): received mail's attachments kept in the uploads storage (docs/bounces.md "Attachments"). */
  readonly storeAttachments: boolean;
}

/** Default INBOUND_SMTP_MAX_SIZE_MB. */
export const DEFAULT_INBOUND_SMTP_MAX_SIZE_MB = 10;

/** METRICS_PORT: a port of its own, distinct from the API's and the inbound receiver's. */
function metricsPortOf(e: { METRICS_PORT: number; PORT: number; ROLE: Role; INBOUND_SMTP_PORT: number }): number | undefined {
  if (!e.METRICS_PORT) return undefined;
  if (e.ROLE !== 'worker' && e.METRICS_PORT === e.PORT) throw new ConfigError(`METRICS_PORT must differ from PORT (${e.PORT}): the API already serves /metrics there`);
  if (e.METRICS_PORT === e.INBOUND_SMTP_PORT) throw new ConfigError(`METRICS_PORT must differ from INBOUND_SMTP_PORT (${e.INBOUND_SMTP_PORT})`);
  return e.METRICS_PORT;
}

/** INBOUND_SMTP_PORT turns the receiver on; it needs BOUNCE_DOMAIN, and a certificate needs its key. */
function inboundSmtpConfig(e: {
  BOUNCE_DOMAIN?: string;
  INBOUND_SMTP_PORT: number;
  INBOUND_SMTP_HOST: string;
  INBOUND_SMTP_TLS_CERT?: string;
  INBOUND_SMTP_TLS_KEY?: string;
  INBOUND_SMTP_MAX_SIZE_MB?: number;
  INBOUND_SMTP_MESSAGES_PER_MINUTE: number;
  INBOUND_SMTP_CONNECTIONS_PER_MINUTE: number;
  INBOUND_STORE_ATTACHMENTS: boolean;
}): InboundSmtpConfig | undefined {
  const certFile = e.INBOUND_SMTP_TLS_CERT?.trim();
  const keyFile = e.INBOUND_SMTP_TLS_KEY?.trim();
  if (!e.INBOUND_SMTP_PORT) {
    if (certFile || keyFile) throw new ConfigError(`INBOUND_SMTP_PORT must be set with ${certFile ? 'INBOUND_SMTP_TLS_CERT' : 'INBOUND_SMTP_TLS_KEY'} (the receiver is off without a port)`);
    return undefined;
  }
  if (!e.BOUNCE_DOMAIN) throw new ConfigError('BOUNCE_DOMAIN must be set with INBOUND_SMTP_PORT (the receiver accepts mail only for its bounce addresses)');
  if (certFile && !keyFile) throw new ConfigError('INBOUND_SMTP_TLS_KEY must be set with INBOUND_SMTP_TLS_CERT');
  if (keyFile && !certFile) throw new ConfigError('INBOUND_SMTP_TLS_CERT must be set with INBOUND_SMTP_TLS_KEY');
  for (const [name, file] of [['INBOUND_SMTP_TLS_CERT', certFile], ['INBOUND_SMTP_TLS_KEY', keyFile]] as const) {
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch {
      throw new ConfigError(`${name} "${file}" is not a readable file`);
    }
  }
  return Object.freeze({
    port: e.INBOUND_SMTP_PORT,
    host: e.INBOUND_SMTP_HOST.trim() || '0.0.0.0',
    tls: certFile && keyFile ? Object.freeze({ certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) }) : undefined,
    maxSizeBytes: Math.floor((e.INBOUND_SMTP_MAX_SIZE_MB ?? DEFAULT_INBOUND_SMTP_MAX_SIZE_MB) * 1024 * 1024),
    messagesPerMinute: e.INBOUND_SMTP_MESSAGES_PER_MINUTE,
    connectionsPerMinute: e.INBOUND_SMTP_CONNECTIONS_PER_MINUTE,
    storeAttachments: e.INBOUND_STORE_ATTACHMENTS,
  });
}

/** Image uploads: the per-project quota and where the files are kept. */
export interface UploadsConfig {
  /** Bytes of stored images per project (UPLOAD_QUOTA_MB, default 1024 MB). */
  readonly quotaBytes: number;
  /** Local storage folder, DATA_DIR/uploads (used when `s3` is undefined). */
  readonly localDir: string;
  /** S3-compatible storage, on when S3_BUCKET is set; undefined: local disk. */
  readonly s3: S3Config | undefined;
}

/** An S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Backblaze B2, Wasabi, …). */
export interface S3Config {
  readonly bucket: string;
  /** S3_REGION, default `us-east-1` (R2: `auto`). */
  readonly region: string;
  /** S3_ENDPOINT; undefined: AWS's own endpoint for the region. */
  readonly endpoint: string | undefined;
  /** S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY; undefined: the AWS SDK's default chain (AWS_* variables, instance or task role). */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
  /** S3_FORCE_PATH_STYLE: `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint>/<key>` (MinIO and most self-hosted servers). */
  readonly forcePathStyle: boolean;
}

export interface OAuthClient {
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface OAuthClients {
  readonly github?: OAuthClient;
  readonly google?: OAuthClient;
}

/** Billing settings, all required once STRIPE_SECRET_KEY is set (docs/billing.md). */
export interface BillingConfig {
  readonly secretKey: string;
  /** Verifies POST /webhooks/incoming/payments (`whsec_…`, from the Stripe webhook endpoint). */
  readonly webhookSecret: string;
  /** The recurring price a checkout subscribes the project to. */
  readonly priceId: string;
  /** Where the Stripe API is; undefined: Stripe's own (api.stripe.com). Tests and proxies only. */
  readonly apiUrl: string | undefined;
  /** Emails a month (all categories together) of a project without a subscription. Default 1,000. */
  readonly freeEmailsPerMonth: number;
}

/** STRIPE_SECRET_KEY turns billing on; it then needs the webhook secret and the price. */
/** The relay providers' webhook secrets (docs/bounces.md, Provider webhooks). */
export interface ProviderWebhookSecrets {
  /**
   * POSTMARK_WEBHOOK_USER / POSTMARK_WEBHOOK_PASSWORD: the HTTP Basic credentials of the webhook
   * URL; POSTMARK_WEBHOOK_HEADER: a custom header the webhook sends. Each one set is required.
   */
  readonly postmark?: { readonly basic?: { readonly user: string; readonly password: string }; readonly header?: { readonly name: string; readonly value: string } };
  /** MAILGUN_WEBHOOK_SIGNING_KEY: the HTTP webhook signing key. */
  readonly mailgunSigningKey?: string;
  /** SENDGRID_WEBHOOK_PUBLIC_KEY: the Signed Event Webhook's verification key (base64 DER). */
  readonly sendgridPublicKey?: string;
  /** RESEND_WEBHOOK_SECRET: the endpoint's signing secret (`whsec_…`). */
  readonly resendSecret?: string;
}

function providerWebhooksOf(e: {
  POSTMARK_WEBHOOK_USER?: string;
  POSTMARK_WEBHOOK_PASSWORD?: string;
  POSTMARK_WEBHOOK_HEADER?: { name: string; value: string };
  MAILGUN_WEBHOOK_SIGNING_KEY?: string;
  SENDGRID_WEBHOOK_PUBLIC_KEY?: string;
  RESEND_WEBHOOK_SECRET?: string;
}): ProviderWebhookSecrets {
  const user = e.POSTMARK_WEBHOOK_USER ?? '';
  const password = e.POSTMARK_WEBHOOK_PASSWORD ?? '';
  if (user && !password) throw new ConfigError('POSTMARK_WEBHOOK_PASSWORD must be set with POSTMARK_WEBHOOK_USER (Postmark webhooks authenticate with both)');
  if (password && !user) throw new ConfigError('POSTMARK_WEBHOOK_USER must be set with POSTMARK_WEBHOOK_PASSWORD (Postmark webhooks authenticate with both)');
  if (user.includes(':')) throw new ConfigError('POSTMARK_WEBHOOK_USER must not contain ":" (HTTP Basic user names cannot)');
  return Object.freeze({
    postmark:
      user || e.POSTMARK_WEBHOOK_HEADER
        ? Object.freeze({ basic: user ? Object.freeze({ user, password }) : undefined, header: e.POSTMARK_WEBHOOK_HEADER ? Object.freeze({ ...e.POSTMARK_WEBHOOK_HEADER }) : undefined })
        : undefined,
    mailgunSigningKey: e.MAILGUN_WEBHOOK_SIGNING_KEY?.trim() || undefined,
    sendgridPublicKey: e.SENDGRID_WEBHOOK_PUBLIC_KEY,
    resendSecret: e.RESEND_WEBHOOK_SECRET,
  });
}

function billingConfig(e: {
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  STRIPE_PRICE_ID?: string;
  STRIPE_API_URL?: string;
  BILLING_FREE_EMAILS_PER_MONTH: number;
}): BillingConfig | undefined {
  const secretKey = e.STRIPE_SECRET_KEY?.trim();
  if (!secretKey) return undefined;
  const webhookSecret = e.STRIPE_WEBHOOK_SECRET?.trim();
  const priceId = e.STRIPE_PRICE_ID?.trim();
  if (!webhookSecret) throw new ConfigError('STRIPE_WEBHOOK_SECRET must be set with STRIPE_SECRET_KEY (it verifies POST /webhooks/incoming/payments)');
  if (!priceId) throw new ConfigError('STRIPE_PRICE_ID must be set with STRIPE_SECRET_KEY (the price a checkout subscribes to)');
  return Object.freeze({ secretKey, webhookSecret, priceId, apiUrl: e.STRIPE_API_URL, freeEmailsPerMonth: e.BILLING_FREE_EMAILS_PER_MONTH });
}

/**
 * mkdir -p one level at a time: Node's recursive mkdirSync loops forever on some
 * pseudo file systems (/proc), this fails with their error instead.
 */
function makeDirs(dir: string): void {
  if (existsSync(dir)) return;
  makeDirs(path.dirname(dir));
  mkdirSync(dir);
}

/** Ensures DATA_DIR exists and is writable; throws a ConfigError naming it otherwise. */
export function ensureDataDir(dataDir: string): void {
  try {
    makeDirs(path.resolve(dataDir));
    accessSync(dataDir, constants.W_OK);
  } catch (err) {
    const reason = err instanceof Error && 'code' in err ? String(err.code) : 'not writable';
    throw new ConfigError(`DATA_DIR "${dataDir}" is not writable (${reason})`);
  }
}

/** Reads SECRET from DATA_DIR/secret, creating it on first start. */
function loadOrCreateSecret(dataDir: string): string {
  const file = path.join(dataDir, 'secret');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    ensureDataDir(dataDir);
    const secret = randomBytes(48).toString('base64url');
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  }
}

/** Parses `env` with `schema`, or throws a ConfigError naming the first bad variable. */
function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.output<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const name = String(issue?.path[0] ?? 'environment');
  const message = issue?.message ?? 'invalid';
  throw new ConfigError(message.includes(name) ? message : `${name}: ${message}`);
}

/** `<PREFIX>_CLIENT_ID` and `_SECRET` together, or neither (one alone is a mistake worth failing for). */
function oauthClient(prefix: string, id: string | undefined, secret: string | undefined): OAuthClient | undefined {
  const clientId = id?.trim();
  const clientSecret = secret?.trim();
  if (!clientId && !clientSecret) return undefined;
  if (!clientId) throw new ConfigError(`${prefix}_CLIENT_ID must be set with ${prefix}_CLIENT_SECRET`);
  if (!clientSecret) throw new ConfigError(`${prefix}_CLIENT_SECRET must be set with ${prefix}_CLIENT_ID`);
  return Object.freeze({ clientId, clientSecret });
}

function oauthClients(e: { GITHUB_CLIENT_ID?: string; GITHUB_CLIENT_SECRET?: string; GOOGLE_CLIENT_ID?: string; GOOGLE_CLIENT_SECRET?: string }): OAuthClients {
  const github = oauthClient('GITHUB', e.GITHUB_CLIENT_ID, e.GITHUB_CLIENT_SECRET);
  const google = oauthClient('GOOGLE', e.GOOGLE_CLIENT_ID, e.GOOGLE_CLIENT_SECRET);
  return Object.freeze({ ...(github && { github }), ...(google && { google }) });
}

/** Default UPLOAD_QUOTA_MB. */
export const DEFAULT_UPLOAD_QUOTA_MB = 1024;

/** S3_BUCKET turns S3 storage on; the other S3_* variables need it, and the key id and secret go together. */
function uploadsConfig(
  e: {
    UPLOAD_QUOTA_MB?: number;
    S3_BUCKET?: string;
    S3_REGION?: string;
    S3_ENDPOINT?: string;
    S3_ACCESS_KEY_ID?: string;
    S3_SECRET_ACCESS_KEY?: string;
    S3_FORCE_PATH_STYLE: boolean;
  },
  dataDir: string,
): UploadsConfig {
  const quotaBytes = Math.floor((e.UPLOAD_QUOTA_MB ?? DEFAULT_UPLOAD_QUOTA_MB) * 1024 * 1024);
  const localDir = path.join(dataDir, 'uploads');
  const bucket = e.S3_BUCKET?.trim();
  const accessKeyId = e.S3_ACCESS_KEY_ID?.trim();
  const secretAccessKey = e.S3_SECRET_ACCESS_KEY?.trim();
  if (!bucket) {
    const stray = (['S3_REGION', 'S3_ENDPOINT', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const).find((k) => e[k]?.trim());
    if (stray) throw new ConfigError(`S3_BUCKET must be set with ${stray} (S3 storage of uploads is on only with a bucket)`);
    return Object.freeze({ quotaBytes, localDir, s3: undefined });
  }
  if (/[\s/]/.test(bucket)) throw new ConfigError(`S3_BUCKET must be a bucket name (no "/" or spaces), got "${bucket}"`);
  if (accessKeyId && !secretAccessKey) throw new ConfigError('S3_SECRET_ACCESS_KEY must be set with S3_ACCESS_KEY_ID');
  if (secretAccessKey && !accessKeyId) throw new ConfigError('S3_ACCESS_KEY_ID must be set with S3_SECRET_ACCESS_KEY');
  const s3: S3Config = Object.freeze({
    bucket,
    region: e.S3_REGION?.trim() || 'us-east-1',
    endpoint: e.S3_ENDPOINT?.replace(/\/+$/, ''),
    credentials: accessKeyId && secretAccessKey ? Object.freeze({ accessKeyId, secretAccessKey }) : undefined,
    forcePathStyle: e.S3_FORCE_PATH_STYLE,
  });
  return Object.freeze({ quotaBytes, localDir, s3 });
}

/** Where the database is: the server's DATA_DIR and DATABASE_URL rules. */
export type DatabaseConfig = Pick<Config, 'dataDir' | 'databaseUrl'>;

/**
 * DATA_DIR and DATABASE_URL read exactly as {@link loadConfig} reads them, with no side
 * effect: unlike loadConfig, it never creates DATA_DIR or its generated SECRET (the operator
 * CLI must not leave a data folder where none was).
 */
export function loadDatabaseConfig(env: NodeJS.ProcessEnv = process.env): DatabaseConfig {
  const e = parseEnv(envSchema.pick({ DATA_DIR: true, DATABASE_URL: true }), env);
  return Object.freeze({ dataDir: path.resolve(e.DATA_DIR), databaseUrl: e.DATABASE_URL });
}

/** SYSTEM_FROM, default `no-reply@<host of PUBLIC_URL>`. */
const systemFromOf = (e: { SYSTEM_FROM?: string | undefined; PUBLIC_URL?: string | undefined }): string =>
  e.SYSTEM_FROM ?? `no-reply@${new URL(e.PUBLIC_URL ?? 'http://localhost').hostname.replace(/^\[|\]$/g, '')}`;

/** The From of the instance's account emails as {@link loadConfig} reads it, for the operator CLI (no side effect). */
export function loadSystemFrom(env: NodeJS.ProcessEnv = process.env): string {
  return systemFromOf(parseEnv(envSchema.pick({ SYSTEM_FROM: true, PUBLIC_URL: true }), env));
}

/**
 * The only reader of process.env. Validates every variable and fails fast with
 * a message that names the offending variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const e = parseEnv(envSchema, env);
  const dataDir = path.resolve(e.DATA_DIR);
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    dataDir,
    databaseUrl: e.DATABASE_URL,
    role: e.ROLE,
    smtpUrl: e.SMTP_URL,
    dnsServers: Object.freeze(e.DNS_SERVERS),
    secret: e.SECRET || loadOrCreateSecret(dataDir),
    signupEnabled: e.SIGNUP_ENABLED,
    systemFrom: systemFromOf(e),
    billing: billingConfig(e),
    redisUrl: e.REDIS_URL,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    signinRateLimitPerMinute: e.SIGNIN_RATE_LIMIT_PER_MINUTE,
    idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    bodyTimeoutSeconds: e.BODY_TIMEOUT_SECONDS,
    uploadTimeoutSeconds: e.UPLOAD_TIMEOUT_SECONDS,
    snsVerify: e.SNS_VERIFY,
    autoDisableProjects: e.AUTO_DISABLE_PROJECTS,
    snsTopicArns: Object.freeze(e.SNS_TOPIC_ARNS),
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    providerWebhooks: providerWebhooksOf(e),
    projectSendingRate: e.PROJECT_SENDING_RATE,
    maxProjectSendingRate: e.MAX_PROJECT_SENDING_RATE,
    logLevel: e.LOG_LEVEL,
    oauth: oauthClients(e),
    uploads: uploadsConfig(e, dataDir),
    dashboardDist: e.DASHBOARD_DIST ? path.resolve(e.DASHBOARD_DIST) : undefined,
    bounceDomain: e.BOUNCE_DOMAIN,
    inboundSmtp: inboundSmtpConfig(e),
    metricsToken: e.METRICS_TOKEN,
    metricsPort: metricsPortOf(e),
    shutdownDelaySeconds: e.SHUTDOWN_DELAY_SECONDS,
  });
}

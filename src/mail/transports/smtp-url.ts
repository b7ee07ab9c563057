import os from 'node:os';
import type tls from 'node:tls';

/** Pool defaults; each can be overridden by a query parameter of SMTP_URL (`?maxConnections=16`). */
export const SMTP_POOL_DEFAULTS = {
  /** Connections kept open to the relay. */
  maxConnections: 16,
  /** Messages per connection; then it says QUIT and a new one is opened. */
  maxMessages: 1000,
  /** Milliseconds to open the TCP connection (and the TLS handshake of smtps://). */
  connectionTimeout: 10_000,
  /** Milliseconds from the connection to the relay's 220 greeting. */
  greetingTimeout: 10_000,
  /** No answer for this long during a transaction fails the attempt (it is retried); an idle connection is closed. */
  socketTimeout: 60_000,
} as const;

/** Everything the SMTP client takes from SMTP_URL. */
export interface SmtpOptions {
  host: string;
  port: number;
  /** smtps://: TLS from the first byte. */
  secure: boolean;
  /** Never STARTTLS, even when offered. */
  ignoreTLS: boolean;
  /** Fail unless the connection is TLS (smtps://, or STARTTLS offered and done). */
  requireTLS: boolean;
  /** The URL's user and password, URL-decoded (AUTH PLAIN, else LOGIN). */
  auth: { user: string; pass: string } | undefined;
  /** The EHLO/HELO hostname. */
  name: string;
  /** node:tls options of the TLS connection (`tls.*` parameters). */
  tls: tls.ConnectionOptions;
  maxConnections: number;
  maxMessages: number;
  connectionTimeout: number;
  greetingTimeout: number;
  socketTimeout: number;
  /** At most `rateLimit` messages per `rateDelta` ms over the whole pool (undefined: no limit). */
  rateLimit: number | undefined;
  rateDelta: number;
}

const NUMBERS = ['maxConnections', 'maxMessages', 'connectionTimeout', 'greetingTimeout', 'socketTimeout', 'rateLimit', 'rateDelta'] as const;
const BOOLEANS = ['ignoreTLS', 'requireTLS'] as const;
const TLS_BOOLEANS = ['rejectUnauthorized'] as const;
const TLS_STRINGS = ['servername', 'minVersion', 'maxVersion', 'ciphers'] as const;
/** Read by transports/index.ts (the per-project rate), not by the client. */
const OURS = ['projectRate'] as const;

/** Every query parameter SMTP_URL may carry; any other one is refused at start. */
export const SMTP_URL_PARAMS: readonly string[] = [
  ...NUMBERS,
  ...BOOLEANS,
  'name',
  ...TLS_BOOLEANS.map((p) => `tls.${p}`),
  ...TLS_STRINGS.map((p) => `tls.${p}`),
  ...OURS,
];

function positiveInteger(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`SMTP_URL: ${name} must be a positive integer, got "${value}"`);
  return n;
}

function boolean(name: string, value: string): boolean {
  if (['true', '1', 'yes', ''].includes(value.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(value.toLowerCase())) return false;
  throw new Error(`SMTP_URL: ${name} must be true or false, got "${value}"`);
}

/** The client's options from SMTP_URL: our defaults, then the URL's parameters. Throws on anything it does not know. */
export function smtpPoolOptions(smtpUrl: string): SmtpOptions {
  const url = new URL(smtpUrl);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new Error(`SMTP_URL: the scheme must be smtp:// or smtps://, got "${url.protocol}//"`);
  const secure = url.protocol === 'smtps:';
  const options: SmtpOptions = {
    ...SMTP_POOL_DEFAULTS,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost',
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    ignoreTLS: false,
    requireTLS: false,
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    name: os.hostname(),
    tls: {},
    rateLimit: undefined,
    rateDelta: 1000,
  };
  const unknown: string[] = [];
  for (const [key, value] of url.searchParams) {
    if ((NUMBERS as readonly string[]).includes(key)) options[key as (typeof NUMBERS)[number]] = positiveInteger(key, value);
    else if ((BOOLEANS as readonly string[]).includes(key)) options[key as (typeof BOOLEANS)[number]] = boolean(key, value);
    else if (key === 'name') options.name = value;
    else if (key.startsWith('tls.') && (TLS_BOOLEANS as readonly string[]).includes(key.slice(4))) options.tls = { ...options.tls, [key.slice(4)]: boolean(key, value) };
    else if (key.startsWith('tls.') && (TLS_STRINGS as readonly string[]).includes(key.slice(4))) options.tls = { ...options.tls, [key.slice(4)]: value };
    else if (!(OURS as readonly string[]).includes(key)) unknown.push(key);
  }
  if (unknown.length > 0) {
    throw new Error(`SMTP_URL: unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}; supported: ${SMTP_URL_PARAMS.join(', ')}`);
  }
  if (!options.name || /[\s<>]/.test(options.name)) throw new Error(`SMTP_URL: name must be a hostname, got "${options.name}"`);
  return options;
}

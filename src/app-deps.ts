import { type Kysely, sql } from 'kysely';
import type { Config } from './config.js';
import type { Database } from './db/schema.js';
import type { KeyCache } from './http/key-cache.js';
import { createSessions, type Sessions } from './http/session.js';
import { createDns, type Dns } from './lib/dns.js';
import { createTokens, type Tokens } from './lib/tokens.js';
import { createMailTransport, type MailTransport } from './mail/transports/index.js';
import { configureSystemEmail } from './modules/emails/index.js';
import type { LocalWorkers } from './modules/system/index.js';

/** What route modules and jobs receive: configuration, the database and shared services. */
export interface AppDeps {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly sessions: Sessions;
  /** Lookups through DNS_SERVERS with timeouts (domain verification, /v1/verify). */
  readonly dns: Dns;
  /** Signed link tokens (tracking, unsubscribe pages). */
  readonly tokens: Tokens;
  /** SMTP_URL's pooled relay transport, or the capture outbox; close it after the worker stops. */
  readonly mail: MailTransport;
  /** API key → project lookups cached by the server's API (src/http/key-cache.ts); unset: looked up on every request. */
  readonly keyCache?: KeyCache;
  /**
   * Generic-plan connections for the fixed statements of hot write paths (connectForRequests'
   * `hot`: POST /v1/track and /v1/send); unset: they run on `db`.
   */
  readonly hotDb?: Kysely<Database>;
  /** Checks that the database answers (GET /health): on its own reserved connection in the server. */
  readonly ping: () => Promise<void>;
  /** Where GET /health/ready reads (the server's reserved connection, `connectForRequests(…).health`); unset: `db`. */
  readonly healthDb?: Kysely<Database>;
  /** The job workers this process runs (ROLE all or worker): GET /health/ready wants their heartbeats. Unset: none. */
  readonly workers?: LocalWorkers;
  /** True once the process is shutting down (SIGTERM): GET /health/ready answers 503 while requests are still served. */
  readonly stopping?: () => boolean;
}

/** `ping` defaults to a query on `db`'s pool; the server passes `connectForRequests(…).ping`. */
export function createAppDeps(config: Config, db: Kysely<Database>, opts: { ping?: () => Promise<void> } = {}): AppDeps {
  configureSystemEmail({ from: config.systemFrom });
  return {
    ping:
      opts.ping ??
      (async () => {
        await sql`SELECT 1`.execute(db);
      }),
    config,
    db,
    sessions: createSessions(config.secret, config.publicUrl),
    dns: createDns({ servers: config.dnsServers }),
    tokens: createTokens(config.secret),
    mail: createMailTransport(config.smtpUrl),
  };
}

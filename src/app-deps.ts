import type { Kysely } from 'kysely';
import type { Config } from './config.js';
import type { Database } from './db/schema.js';
import type { Sessions } from './http/session.js';

/** What route modules receive: configuration, the database, and session signing. */
export interface AppDeps {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly sessions: Sessions;
}

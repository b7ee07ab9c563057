import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';

/** What tasks receive. */
export interface JobDeps {
  readonly config: Config;
  readonly db: Kysely<Database>;
}

import type { Kysely } from 'kysely';
import type { AppDeps } from '../app-deps.js';
import type { Database } from '../db/schema.js';

/** What tasks receive: the app's services without the HTTP session signer. */
export type JobDeps = Pick<AppDeps, 'config' | 'db' | 'dns' | 'tokens' | 'mail'> & {
  /**
   * The pool of delivery's shared statements, planned once per connection (startWorker opens it;
   * src/db/connection.ts `genericPlans`). Unset: they run on `db`.
   */
  deliveryDb?: Kysely<Database>;
};

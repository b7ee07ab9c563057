import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

/**
 * Deletes Idempotency-Key records older than `ttlHours` (the cleanup job's statement; the keys
 * themselves are claimed by http/idempotency.ts). Here so that jobs/ need not import http/.
 */
export async function deleteExpiredIdempotencyKeys(db: Kysely<Database>, ttlHours: number): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', sql<Date>`now() - make_interval(hours => ${ttlHours})`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

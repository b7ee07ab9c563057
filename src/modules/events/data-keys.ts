import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/** Events sampled by {@link sampleEventDataKeys}: the latest ones of the name. */
export const EVENT_KEY_SAMPLE = 1000;

/**
 * The data keys seen on the latest `sample` events of one name (index events_project_name_created_idx,
 * read backwards), with how many of them carry each key and its most frequent JSON type.
 */
export async function sampleEventDataKeys(
  db: Kysely<Database>,
  projectId: string,
  name: string,
  sample = EVENT_KEY_SAMPLE,
): Promise<{ sampled: number; keys: { key: string; type: string; count: number }[] }> {
  const { rows } = await sql<{ sampled: number; keys: { key: string; type: string; count: number }[] | null }>`
    WITH latest AS (
      SELECT data FROM events WHERE project_id = ${projectId}::uuid AND name = ${name}
      ORDER BY created_at DESC LIMIT ${sample}
    ),
    kv AS (SELECT e.key, jsonb_typeof(e.value) AS type FROM latest CROSS JOIN LATERAL jsonb_each(latest.data) AS e),
    per_type AS (SELECT key, type, count(*)::int AS n FROM kv GROUP BY key, type),
    per_key AS (
      SELECT key, sum(n)::int AS count, (array_agg(type ORDER BY n DESC, type))[1] AS type FROM per_type GROUP BY key
    )
    SELECT (SELECT count(*) FROM latest)::int AS sampled,
           (SELECT jsonb_agg(jsonb_build_object('key', key, 'type', type, 'count', count) ORDER BY count DESC, key COLLATE "C") FROM per_key) AS keys`.execute(db);
  return { sampled: rows[0]?.sampled ?? 0, keys: rows[0]?.keys ?? [] };
}

import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * Takes the project's next sending slot in the shared throttle (table project_send_slots,
 * migration 0024): a GCRA over one row per project, so every worker process draws from the same
 * bucket. One statement: the row lock orders concurrent workers, the slot is reserved whatever
 * the caller does next. Answers how many milliseconds the email must wait (0: send now).
 *
 * `intervalMs` = 1000 / rate; `toleranceMs` = the burst allowed ahead of the steady pace.
 */
export async function takeSendSlot(
  db: Kysely<Database>,
  input: { projectId: string; intervalMs: number; toleranceMs: number },
): Promise<number> {
  const interval = sql`make_interval(secs => ${input.intervalMs / 1000})`;
  const { rows } = await sql<{ wait_ms: number }>`
    INSERT INTO project_send_slots AS s (project_id, tat) VALUES (${input.projectId}, now() + ${interval})
    ON CONFLICT (project_id) DO UPDATE SET tat = greatest(s.tat, now()) + ${interval}
    RETURNING greatest(0, extract(epoch FROM s.tat - ${interval} - now()) * 1000 - ${input.toleranceMs})::float8 AS wait_ms`.execute(db);
  return rows[0]?.wait_ms ?? 0;
}

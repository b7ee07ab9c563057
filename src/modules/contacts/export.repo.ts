import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/** One fetched contact: CSV rows carry their data cells (`k0`, `k1`, … in key order), NDJSON rows the whole data. */
export interface ExportRow {
  email: string;
  subscribed: boolean;
  /** ISO 8601 UTC with milliseconds, as PostgreSQL formats it. */
  created_at: string;
  /** `data::text` (NDJSON). */
  data?: string;
  /** `(data -> key)::text` of each key, null when absent (CSV). */
  [cell: `k${number}`]: string | null;
}

/** An open export: one REPEATABLE READ, read-only transaction holding a cursor over the contacts. */
export interface ExportCursor {
  /** The data keys of the exported contacts in byte order (CSV only; empty for NDJSON). */
  readonly keys: readonly string[];
  /** The next `rows` contacts in (created_at, id) order; fewer at the end, none once done. */
  fetch(rows: number): Promise<ExportRow[]>;
  /**
   * Ends the transaction (and so the cursor and the advisory lock) and releases the connection.
   * A statement still running is cancelled first. Safe to call more than once.
   */
  close(): Promise<void>;
}

export type OpenExportResult =
  | { ok: ExportCursor }
  /** Every one of the project's export slots is held by a running export. */
  | { busy: true }
  /** More distinct data keys than `maxKeys` (CSV). */
  | { tooManyKeys: true };

export interface OpenExportInput {
  projectId: string;
  /** Condition over the contacts row `c` (segment, condition, subscription), or none. */
  where?: RawBuilder<SqlBool>;
  format: 'csv' | 'ndjson';
  /** CSV: at most this many data columns. */
  maxKeys: number;
  /** Exports of one project that may run at once (advisory locks, across processes). */
  slots: number;
  /**
   * Backstop for a transaction left idle (PostgreSQL ends the session): longer than any wait
   * of the export itself for a slow client.
   */
  idleTimeoutMs: number;
  /** Aborted: the client went away; a statement still running is cancelled. */
  signal?: AbortSignal;
}

/** UTC with milliseconds, the API's date format (DESIGN §10). */
const ISO_MS = sql`to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Takes one of the project's export slots for the transaction: its number, or null when all are held. */
const takeSlot = (projectId: string, slots: number) => sql<{ slot: number | null }>`
  SELECT (SELECT s FROM generate_series(0, ${slots - 1}::int) s
          WHERE pg_try_advisory_xact_lock(hashtextextended('contacts-export:' || ${projectId}::text || ':' || s, 0))
          LIMIT 1) AS slot`;

/**
 * Opens the export: a REPEATABLE READ, read-only transaction (one snapshot: the header's keys
 * and every row come from the same moment, whatever is written meanwhile), one of the project's
 * export slots, the data keys of the exported set (CSV), and a cursor ordered by
 * (created_at, id) (contacts_project_created_idx). The caller must `close()` it.
 */
export async function openExportCursor(db: Kysely<Database>, input: OpenExportInput): Promise<OpenExportResult> {
  const trx = await db.startTransaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute();
  let pid: number | undefined;
  let running: Promise<unknown> | undefined;
  let closed: Promise<void> | undefined;

  /** Runs one statement, remembered so that close() can cancel it; none starts once closing. */
  const run = <T>(query: RawBuilder<T>): Promise<T[]> => {
    if (closed) return Promise.reject(new Error('export closed'));
    const p = query.execute(trx).then((r) => r.rows);
    running = p.catch(() => undefined);
    return p.finally(() => {
      if (!closed) running = undefined;
    });
  };
  const onAbort = () => void close().catch(() => undefined);
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      input.signal?.removeEventListener('abort', onAbort);
      if (running) {
        // Signals the backend now; a cancel reaching it after the statement ended is ignored there.
        if (pid !== undefined) await sql`SELECT pg_cancel_backend(${pid}::int)`.execute(db).catch(() => undefined);
        await running;
      }
      await trx.rollback().execute();
    })());
  input.signal?.addEventListener('abort', onAbort, { once: true });
  if (input.signal?.aborted) onAbort();

  try {
    const [backend] = await run(sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`);
    pid = backend?.pid;
    await run(sql`SELECT set_config('idle_in_transaction_session_timeout', ${`${Math.ceil(input.idleTimeoutMs)}ms`}, true)`);
    const [taken] = await run(takeSlot(input.projectId, input.slots));
    if (taken?.slot === null || taken?.slot === undefined) {
      await close();
      return { busy: true };
    }
    const where = input.where ? sql`AND ${input.where}` : sql``;
    let keys: string[] = [];
    if (input.format === 'csv') {
      const rows = await run(sql<{ key: string }>`
        SELECT key FROM (
          SELECT DISTINCT jsonb_object_keys(c.data) AS key FROM contacts c
          WHERE c.project_id = ${input.projectId}::uuid ${where}
        ) k ORDER BY key COLLATE "C" LIMIT ${input.maxKeys + 1}`);
      if (rows.length > input.maxKeys) {
        await close();
        return { tooManyKeys: true };
      }
      keys = rows.map((r) => r.key);
    }
    const columns =
      input.format === 'csv'
        ? keys.map((key, i) => sql`, (c.data -> ${key}::text)::text AS ${sql.id(`k${i}`)}`)
        : [sql`, c.data::text AS data`];
    await run(sql`DECLARE contacts_export NO SCROLL CURSOR FOR
      SELECT c.email, c.subscribed, ${ISO_MS} AS created_at${sql.join(columns, sql``)}
      FROM contacts c WHERE c.project_id = ${input.projectId}::uuid ${where}
      ORDER BY c.created_at, c.id`);
    return {
      ok: {
        keys,
        fetch: (rows) => run(sql<ExportRow>`FETCH FORWARD ${sql.lit(Math.max(1, Math.floor(rows)))} FROM contacts_export`),
        close,
      },
    };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

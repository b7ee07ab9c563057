import { Readable } from 'node:stream';
import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { compileCondition, validateCondition } from '../../conditions/index.js';
import type { Database } from '../../db/schema.js';
import { ApiError, ErrorCode, validationError } from '../../lib/errors.js';
import { findProjectById } from '../projects/index.js';
import { segmentMembership } from '../segments/index.js';
import { csvHeader, csvRecord, exportFilename, ndjsonRecord } from './export.format.js';
import { type ExportCursor, type ExportRow, openExportCursor } from './export.repo.js';
import { EXPORT_CONTENT_TYPES, type ExportQuery, MAX_EXPORT_COLUMNS } from './export.schema.js';

/** Limits of contact exports (docs/export.md "Limits"). */
export interface ExportLimits {
  /** Exports one API process streams at once: each holds a database connection. Default 4. */
  perProcess: number;
  /** Exports of one project running at once, across processes (advisory locks). Default 2. */
  perProject: number;
  /** A client that takes nothing for this long is cut off (its transaction ended). Default 60 s. */
  stallMs: number;
  /** An export still streaming after this long is cut off (it holds a snapshot). Default 30 min. */
  maxMs: number;
}

export const DEFAULT_EXPORT_LIMITS: ExportLimits = { perProcess: 4, perProject: 2, stallMs: 60_000, maxMs: 30 * 60_000 };

/** Rows of the first fetch, and the bounds of later ones (sized to about BATCH_BYTES of output). */
const FIRST_BATCH = 200;
const MIN_BATCH = 50;
const MAX_BATCH = 2000;
const BATCH_BYTES = 1024 * 1024;

/** Counts the exports of one process: `take` answers a release function, or undefined when all are running. */
export function exportGate(max: number): { take(): (() => void) | undefined; readonly running: number } {
  let running = 0;
  return {
    take() {
      if (running >= max) return undefined;
      running++;
      let released = false;
      return () => {
        if (!released) running--;
        released = true;
      };
    },
    get running() {
      return running;
    },
  };
}

/** The query's filters as one condition over contacts `c`: 404 (segment) and 422 (condition) before anything opens. */
async function exportWhere(db: Kysely<Database>, projectId: string, query: ExportQuery): Promise<RawBuilder<SqlBool> | undefined> {
  const parts: RawBuilder<SqlBool>[] = [];
  if (query.segmentId !== undefined) parts.push(await segmentMembership(db, projectId, query.segmentId));
  if (query.condition !== undefined) {
    let tree: unknown;
    try {
      tree = JSON.parse(query.condition);
    } catch {
      throw validationError([{ field: 'condition', message: 'The condition is not valid JSON', code: 'invalid_string' }]);
    }
    const checked = await validateCondition(db, projectId, tree, 'condition');
    parts.push(await compileCondition(db, projectId, checked, 'c'));
  }
  if (query.subscribed !== undefined) parts.push(sql<SqlBool>`c.subscribed = ${query.subscribed}`);
  return parts.length === 0 ? undefined : sql<SqlBool>`(${sql.join(parts, sql` AND `)})`;
}

/** A streamed export: the file's name and type, and its bytes. */
export interface ContactExport {
  filename: string;
  contentType: string;
  stream: ExportStream;
}

/**
 * Prepares an export: checks the input (404, 422), takes a process slot (503) and a project
 * slot (429), opens the snapshot and reads the data keys (422 beyond MAX_EXPORT_COLUMNS), all
 * before the first byte; then answers the stream. `signal`: the client went away.
 */
export async function startContactExport(
  db: Kysely<Database>,
  input: { projectId: string; query: ExportQuery; limits: ExportLimits; gate: ReturnType<typeof exportGate>; signal: AbortSignal },
): Promise<ContactExport> {
  const { projectId, query, limits } = input;
  const where = await exportWhere(db, projectId, query);
  const project = await findProjectById(db, projectId);
  const release = input.gate.take();
  if (!release) {
    throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, `This server is streaming ${limits.perProcess} exports already`, {
      headers: { 'retry-after': '30' },
      suggestion: 'Retry in a minute',
    });
  }
  let cursor: ExportCursor | undefined;
  try {
    const opened = await openExportCursor(db, {
      projectId,
      where,
      format: query.format,
      maxKeys: MAX_EXPORT_COLUMNS,
      slots: limits.perProject,
      idleTimeoutMs: limits.stallMs + 30_000,
      signal: input.signal,
    });
    if ('busy' in opened) {
      throw new ApiError(429, ErrorCode.RATE_LIMIT_EXCEEDED, `${limits.perProject} exports of this project are running already`, {
        headers: { 'retry-after': '30' },
        suggestion: 'Retry once one of them has finished',
      });
    }
    if ('tooManyKeys' in opened) {
      throw new ApiError(422, ErrorCode.VALIDATION_ERROR, 'Request validation failed', {
        errors: [{ field: 'format', message: `The exported contacts have more than ${MAX_EXPORT_COLUMNS} distinct data keys: too many CSV columns`, code: 'too_big' }],
        suggestion: 'Export with format=ndjson (each line carries its own data), or narrow the export with a segment or condition',
      });
    }
    cursor = opened.ok;
    const ext = query.format;
    const stream =
      query.format === 'csv'
        ? new ExportStream(cursor, csvHeader(cursor.keys, query.bom ?? true), csvRows(cursor.keys.length), limits, release)
        : new ExportStream(cursor, '', ndjsonRows, limits, release);
    return { filename: exportFilename({ id: projectId, name: project?.name ?? '' }, new Date(), ext), contentType: EXPORT_CONTENT_TYPES[query.format], stream };
  } catch (err) {
    release();
    await cursor?.close().catch(() => undefined);
    throw err;
  }
}

type Render = (rows: readonly ExportRow[]) => { text: string; widest: number };

function csvRows(columns: number): Render {
  const names = Array.from({ length: columns }, (_, i) => `k${i}` as const);
  return (rows) => {
    let text = '';
    let widest = 0;
    for (const row of rows) {
      const line = csvRecord(row.email, row.subscribed, row.created_at, names.map((n) => row[n]));
      if (line.length > widest) widest = line.length;
      text += line;
    }
    return { text, widest };
  };
}

const ndjsonRows: Render = (rows) => {
  let text = '';
  let widest = 0;
  for (const row of rows) {
    const line = ndjsonRecord(row.email, row.subscribed, row.created_at, row.data ?? '{}');
    if (line.length > widest) widest = line.length;
    text += line;
  }
  return { text, widest };
};

/**
 * The file as a byte stream that fetches the next batch only when the consumer (the HTTP
 * response, through pipe's backpressure) asks for more, so memory stays at about one batch
 * whatever the export's size. Batches are sized to ~BATCH_BYTES of output by the widest row
 * so far. The transaction ends as soon as the last row is fetched, or when the stream is
 * destroyed (client gone, stalled longer than `stallMs`, or older than `maxMs`).
 */
export class ExportStream extends Readable {
  /** Contacts written so far. */
  rows = 0;
  private batch = FIRST_BATCH;
  private fetching = false;
  private lastRead = Date.now();
  private readonly watchdog: NodeJS.Timeout;
  private readonly deadline: NodeJS.Timeout;

  constructor(
    private readonly cursor: ExportCursor,
    head: string,
    private readonly render: Render,
    limits: ExportLimits,
    private readonly release: () => void,
  ) {
    super({ highWaterMark: 64 * 1024 });
    if (head) this.push(head);
    this.watchdog = setInterval(() => {
      if (!this.fetching && Date.now() - this.lastRead > limits.stallMs) {
        this.destroy(new Error(`the client took nothing for ${limits.stallMs / 1000} s`));
      }
    }, Math.min(1000, limits.stallMs)).unref();
    this.deadline = setTimeout(() => this.destroy(new Error(`the export ran longer than ${limits.maxMs / 1000} s`)), limits.maxMs).unref();
  }

  override _read(): void {
    this.lastRead = Date.now();
    if (this.fetching) return;
    this.fetching = true;
    void this.next();
  }

  private async next(): Promise<void> {
    try {
      const rows = await this.cursor.fetch(this.batch);
      if (this.destroyed) return;
      if (rows.length === 0) {
        await this.cursor.close();
        this.finish();
        this.push(null);
        return;
      }
      const { text, widest } = this.render(rows);
      this.rows += rows.length;
      this.batch = Math.min(MAX_BATCH, Math.max(MIN_BATCH, Math.floor(BATCH_BYTES / Math.max(1, widest))));
      this.fetching = false;
      this.push(text);
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private finish(): void {
    clearInterval(this.watchdog);
    clearTimeout(this.deadline);
    this.release();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.finish();
    this.cursor.close().then(
      () => callback(err),
      (closeErr: unknown) => callback(err ?? (closeErr instanceof Error ? closeErr : new Error(String(closeErr)))),
    );
  }
}

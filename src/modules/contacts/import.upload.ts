import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError, ErrorCode, validationError } from '../../http/errors.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import { insertImportChunks } from './import.repo.js';
import { enqueueJob, insertJob, JobKind } from './jobs.repo.js';

/** Largest CSV file accepted (SPEC Limits: 5 MB). */
export const MAX_IMPORT_BYTES = 5 * 1024 * 1024;
/** Size of the stored pieces of an upload (the import job reads a few at a time). */
const CHUNK_BYTES = 256 * 1024;
/** How much of the start of a file is checked for being CSV text. */
const SNIFF_BYTES = 64 * 1024;

/** 413, and the connection closed after the answer: the rest of the upload is never read. */
export const tooLarge = () =>
  new ApiError(413, ErrorCode.PAYLOAD_TOO_LARGE, `The file is larger than ${MAX_IMPORT_BYTES / 1024 / 1024} MB`, {
    headers: { connection: 'close' },
    suggestion: 'Split the CSV into files of at most 5 MB and import them one after another',
  });

const notCsv = (message: string) => validationError([{ field: 'file', message, code: 'invalid_type' }]);

/** Rejects what is clearly not a CSV text file: binary content or invalid UTF-8 at the start. */
function assertLooksLikeCsv(head: Buffer): void {
  const sample = head.subarray(0, SNIFF_BYTES);
  if (sample.includes(0)) throw notCsv('The file is not a CSV text file (it contains binary data; save it as UTF-8 CSV)');
  try {
    // stream: a character cut at the sample's end is not an error
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: true });
  } catch {
    throw notCsv('The file is not UTF-8 text: save it as "CSV UTF-8"');
  }
  if (sample.toString('utf8').trim() === '') throw notCsv('The file is empty: a header row with an email column is required');
}

/** Counts non-empty lines outside quotes: the rows estimate shown as `total` until the job ends. */
class LineCounter {
  private lines = 0;
  private inQuotes = false;
  private hasContent = false;

  push(buf: Buffer): void {
    for (const b of buf) {
      if (b === 0x22) this.inQuotes = !this.inQuotes;
      if (!this.inQuotes && (b === 0x0a || b === 0x0d)) {
        if (this.hasContent) this.lines++;
        this.hasContent = false;
      } else if (b !== 0x20 && b !== 0x09) {
        this.hasContent = true;
      }
    }
  }

  get total(): number {
    return this.lines + (this.hasContent ? 1 : 0);
  }
}

/** An uploaded file as the HTTP layer hands it over. */
export interface UploadedFile {
  filename: string;
  stream: Readable;
  /** True when the upload stopped at the size limit (checked after the stream ends). */
  truncated: () => boolean;
}

/** A file received in full, not yet stored. */
interface ReceivedFile {
  path: string;
  bytes: number;
  lines: number;
}

/**
 * Receives the whole upload into `dir` (a temp folder) and checks its size and that it is CSV
 * text. `signal` (the request's body deadline) ends the receipt with its reason.
 */
async function receive(file: UploadedFile, dir: string, signal: AbortSignal | undefined): Promise<ReceivedFile> {
  const target = path.join(dir, 'upload.csv');
  const out = createWriteStream(target, { flags: 'wx', mode: 0o600 });
  // A write still pending when the receipt is stopped fails with ERR_STREAM_DESTROYED after the
  // stream is gone: without a listener that would be an uncaught exception (a crashed server).
  // Write errors that matter surface through `once(out, 'drain')` and `finished(out)` below.
  out.on('error', () => undefined);
  const stop = () => file.stream.destroy(signal?.reason instanceof Error ? signal.reason : new Error('upload stopped'));
  if (signal?.aborted) stop();
  signal?.addEventListener('abort', stop, { once: true });
  const lines = new LineCounter();
  const head: Buffer[] = [];
  let headBytes = 0;
  let bytes = 0;
  try {
    for await (const chunk of file.stream) {
      const piece = chunk as Buffer;
      bytes += piece.length;
      if (bytes > MAX_IMPORT_BYTES) throw tooLarge();
      if (headBytes < SNIFF_BYTES) {
        head.push(piece);
        headBytes += piece.length;
      }
      lines.push(piece);
      if (!out.write(piece)) await once(out, 'drain');
    }
    if (file.truncated()) throw tooLarge();
    assertLooksLikeCsv(Buffer.concat(head));
    out.end();
    await finished(out);
    return { path: target, bytes, lines: lines.total };
  } finally {
    signal?.removeEventListener('abort', stop);
    if (!out.writableFinished) out.destroy();
  }
}

/**
 * Receives the whole file first (into a temp file under the OS temp dir: a client that sends
 * slowly holds a socket and a file, never a database connection), then stores it in
 * import_chunks (~256 KB pieces), creates the import job row and enqueues its task in one short
 * transaction. A file that is too large or not CSV leaves nothing behind. Returns the job id.
 */
export async function storeImportUpload(
  db: Kysely<Database>,
  input: { projectId: string; file: UploadedFile; signal?: AbortSignal },
): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mailplatform-import-'));
  try {
    const received = await receive(input.file, dir, input.signal);
    const data = await readFile(received.path);
    const pieces: Buffer[] = [];
    for (let at = 0; at < data.length; at += CHUNK_BYTES) pieces.push(data.subarray(at, at + CHUNK_BYTES));
    const { filename } = input.file;
    return await db.transaction().execute(async (trx) => {
      const jobId = await insertJob(trx, {
        projectId: input.projectId,
        kind: JobKind.import,
        total: Math.max(received.lines - 1, 0),
        payload: { filename, bytes: received.bytes, chunks: pieces.length },
      });
      await insertImportChunks(trx, input.projectId, jobId, pieces);
      await enqueueJob(trx, { jobId, task: Tasks.contactsImport, priority: JobPriority.contacts });
      return jobId;
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

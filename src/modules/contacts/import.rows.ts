import { z } from 'zod';
import type { DataValue, JobRowError } from '../../db/schema.js';
import type { ContactUpsert } from './contacts.upsert.js';
import {
  DATA_LIMIT_MESSAGES,
  DATA_LIMITS,
  type DataLimitBreach,
  type DataLimitIssue,
  dataLimitIssues,
  normalizeEmail,
  RESERVED_DATA_KEYS,
} from './data-rules.js';

/** Columns of an import file at most: email, subscribed and one per data key a contact may hold. */
export const MAX_IMPORT_COLUMNS = DATA_LIMITS.maxKeys + 2;

/** Where the columns of an import file are. */
export interface ImportHeader {
  width: number;
  emailIndex: number;
  subscribedIndex: number | undefined;
  /** Every other named column: its cells become contact data under the column name. */
  dataColumns: { index: number; key: string }[];
}

const EmailSchema = z.email();
const TRUE_WORDS: ReadonlySet<string> = new Set(['true', '1', 'yes']);
const FALSE_WORDS: ReadonlySet<string> = new Set(['false', '0', 'no']);

/** A cell quoted in a message, shortened. */
const quote = (cell: string) => JSON.stringify(cell.length > 80 ? `${cell.slice(0, 80)}…` : cell);

const describeIssue = (issue: DataLimitIssue) => `${issue.key === undefined ? '' : `Column ${quote(issue.key)}: `}${issue.message}`;

/** Reads the header row: `email` is required (any case), `subscribed` optional, the rest is data. */
export function readHeader(cells: readonly string[]): ImportHeader | { error: string } {
  if (cells.length > MAX_IMPORT_COLUMNS) return { error: tooManyColumns(cells.length) };
  const names = cells.map((c) => c.trim());
  const lower = names.map((c) => c.toLowerCase());
  const emailIndex = lower.indexOf('email');
  if (emailIndex === -1) {
    return { error: `The header row has no email column (found: ${names.slice(0, 20).map(quote).join(', ') || 'nothing'})` };
  }
  const subscribed = lower.indexOf('subscribed');
  // One column per key, the last of the same name (it wins); reserved keys are dropped (data rules).
  const columns = new Map<string, number>();
  for (const [index, key] of names.entries()) {
    if (index === emailIndex || index === subscribed || key === '') continue;
    const issue = dataLimitIssues({ [key]: '' })[0];
    if (issue) return { error: `Header: ${describeIssue(issue)}` };
    if (!RESERVED_DATA_KEYS.has(key)) columns.set(key, index);
  }
  const dataColumns = [...columns].map(([key, index]) => ({ index, key })).sort((a, b) => a.index - b.index);
  return { width: cells.length, emailIndex, subscribedIndex: subscribed === -1 ? undefined : subscribed, dataColumns };
}

/** One valid data row. */
export interface ImportRow {
  email: string;
  subscribed: boolean | undefined;
  patch: Record<string, DataValue | null>;
}

/**
 * Validates one data row. Cells stay strings (a CSV has no types: "00123" or "+4420…" must not
 * become numbers); empty cells are ignored and reserved keys dropped, per the data rules, and the
 * data limits apply ({@link dataLimitIssues}).
 */
export function readRow(header: ImportHeader, cells: readonly string[]): ImportRow | { error: string } {
  if (cells.length !== header.width) return { error: `The row has ${cells.length} columns; the header has ${header.width}` };
  const rawEmail = cells[header.emailIndex] ?? '';
  if (rawEmail.trim() === '') return { error: 'Missing email' };
  const email = normalizeEmail(rawEmail);
  if (!EmailSchema.safeParse(email).success) return { error: `Invalid email ${quote(rawEmail)}` };

  let subscribed: boolean | undefined;
  const rawSubscribed = header.subscribedIndex === undefined ? '' : (cells[header.subscribedIndex] ?? '').trim();
  if (rawSubscribed !== '') {
    const word = rawSubscribed.toLowerCase();
    if (TRUE_WORDS.has(word)) subscribed = true;
    else if (FALSE_WORDS.has(word)) subscribed = false;
    else return { error: `Invalid subscribed value ${quote(rawSubscribed)}: use true/false, yes/no or 1/0, or leave it empty` };
  }

  // The data rules, applied straight to the cells (a row is up to 200 of them, and a file up to a
  // million): an empty cell is ignored; reserved and repeated keys were settled by the header.
  const patch: Record<string, string> = {};
  for (const { index, key } of header.dataColumns) {
    const cell = cells[index] ?? '';
    if (cell !== '') patch[key] = cell;
  }
  const issue = dataLimitIssues(patch)[0];
  if (issue) return { error: describeIssue(issue) };
  return { email, subscribed, patch };
}

/** Error entries a job may still store, shared by its batches (the first 1,000 are kept). */
export interface ErrorRoom {
  left: number;
}

/**
 * The rows of one batch: valid rows merged by email (a later row's cells and subscription win,
 * cells it leaves empty keep the earlier row's), invalid rows as error entries.
 */
export class ImportBatch {
  rows = 0;
  failed = 0;
  readonly errors: JobRowError[] = [];
  private readonly byEmail = new Map<string, { upsert: ContactUpsert; rows: number[] }>();

  constructor(private readonly room: ErrorRoom) {}

  private error(row: number, message: string): void {
    this.failed++;
    if (this.room.left <= 0) return;
    this.room.left--;
    this.errors.push({ row, message });
  }

  add(rowNumber: number, result: ImportRow | { error: string }): void {
    this.rows++;
    if ('error' in result) return this.error(rowNumber, result.error);
    const earlier = this.byEmail.get(result.email);
    if (!earlier) {
      // New contacts from an import are subscribed unless the row says otherwise.
      const upsert = { email: result.email, patch: result.patch, subscribed: result.subscribed, subscribedIfNew: true };
      this.byEmail.set(result.email, { upsert, rows: [rowNumber] });
      return;
    }
    earlier.upsert.patch = { ...earlier.upsert.patch, ...result.patch };
    if (result.subscribed !== undefined) earlier.upsert.subscribed = result.subscribed;
    earlier.rows.push(rowNumber);
  }

  /** The contact's data after this batch's rows would break a limit: its rows become errors (nothing written). */
  refuse(email: string, breach: DataLimitBreach): void {
    const rows = this.byEmail.get(email)?.rows ?? [];
    for (const row of rows) this.error(row, DATA_LIMIT_MESSAGES[breach]);
    this.errors.sort((a, b) => a.row - b.row);
  }

  get processed(): number {
    return this.rows - this.failed;
  }

  upserts(): ContactUpsert[] {
    return [...this.byEmail.values()].map((e) => e.upsert);
  }
}

/**
 * A stored file as bounded slices, yielding to the event loop before each one: csv-parse parses
 * a slice synchronously, so a large stored piece would otherwise hold the loop (with ROLE=all the
 * import runs in the API's process). It also bounds the rows validated between two yields: those
 * of one slice (at most ~4,000 cells).
 */
export async function* inSlices(chunks: AsyncIterable<Buffer>, bytes = 8 * 1024): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += bytes) {
      await yieldToEventLoop();
      yield chunk.subarray(at, at + bytes);
    }
  }
}

/** The header row has more than {@link MAX_IMPORT_COLUMNS} columns: the job fails with this message. */
export class HeaderTooWide extends Error {
  constructor() {
    super(tooManyColumns());
    this.name = 'HeaderTooWide';
  }
}

const tooManyColumns = (count?: number) =>
  `The header row has ${count ?? `more than ${MAX_IMPORT_COLUMNS}`} columns; at most ${MAX_IMPORT_COLUMNS} are allowed ` +
  `(email, subscribed and ${DATA_LIMITS.maxKeys} data columns: a contact holds at most ${DATA_LIMITS.maxKeys} data keys)`;

/**
 * Passes a file through, counting the commas of its header row (the first non-empty line;
 * commas between double quotes do not count) and throwing {@link HeaderTooWide} as soon as
 * there are too many: csv-parse would otherwise build the whole row first, and a 5 MB row of
 * 600,000 columns costs it seconds of CPU. The rest of the file passes unread.
 */
const BLANK_BYTES: ReadonlySet<number> = new Set([0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf]);

export async function* guardHeaderWidth(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let done = false;
  let commas = 0;
  let inQuotes = false;
  let content = false;
  for await (const chunk of chunks) {
    for (let i = 0; !done && i < chunk.length; i++) {
      const b = chunk[i];
      if (b === 0x22) inQuotes = !inQuotes;
      else if (inQuotes) continue;
      else if (b === 0x2c && ++commas >= MAX_IMPORT_COLUMNS) throw new HeaderTooWide();
      else if (b === 0x0a || b === 0x0d) done = content;
      // Whitespace and the UTF-8 BOM's bytes are not content: a blank first line is skipped as csv-parse does.
      if (b !== undefined && !BLANK_BYTES.has(b)) content = true;
    }
    yield chunk;
  }
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

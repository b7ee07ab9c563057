/**
 * Pure logic of the contacts pages (no DOM, no imports): the CSV preview parsed in the browser
 * before an import, the typed values of the data editor, and the column list kept in the URL.
 */

export interface CsvPreview {
  header: string[];
  /** The first data rows (cells as written, trimmed like the server trims them). */
  rows: string[][];
  /** Index of the `email` column (any case), -1 when the header has none. */
  emailColumn: number;
  /** Index of the `subscribed` column, -1 when absent. */
  subscribedColumn: number;
  /** True when the text given ended inside the rows shown (only part of the file was read). */
  truncated: boolean;
}

/**
 * The header and first `maxRows` data rows of a CSV text, read by the server's rules
 * (docs/contacts.md "Reading the file"): `,` separator, `"` quoting with `""` inside quotes,
 * quoted fields may hold commas and newlines, CRLF or LF, a UTF-8 BOM dropped, cells trimmed,
 * empty lines skipped.
 */
export function parseCsvPreview(text: string, maxRows = 5): CsvPreview {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const records: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let i = 0;
  const endRow = () => {
    row.push(cell.trim());
    cell = '';
    if (!(row.length === 1 && row[0] === '')) records.push(row);
    row = [];
  };
  let truncated = false;
  while (i < source.length) {
    if (records.length > maxRows + 1) {
      truncated = true;
      break;
    }
    const ch = source[i];
    if (quoted) {
      if (ch === '"') {
        if (source[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else cell += ch;
      i += 1;
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell.trim());
      cell = '';
    } else if (ch === '\n' || ch === '\r') {
      endRow();
      if (ch === '\r' && source[i + 1] === '\n') i += 1;
    } else cell += ch;
    i += 1;
  }
  if (!truncated && (cell !== '' || row.length > 0)) endRow();
  const [header = [], ...rest] = records;
  const lower = header.map((h) => h.toLowerCase());
  return {
    header,
    rows: rest.slice(0, maxRows),
    emailColumn: lower.indexOf('email'),
    subscribedColumn: lower.indexOf('subscribed'),
    truncated: truncated || rest.length > maxRows,
  };
}

export type ValueType = 'string' | 'number' | 'boolean' | 'date';
export type DataValue = string | number | boolean;

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The editor's type of a stored value: ISO 8601 date strings are `date` (as GET /contacts/fields reads them). */
export function typeOf(value: DataValue): ValueType {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return ISO_DATE.test(value) && !Number.isNaN(Date.parse(value)) ? 'date' : 'string';
}

/** The text an input shows for a stored value. */
export function valueToText(value: DataValue): string {
  return typeof value === 'string' ? value : String(value);
}

/** A typed input's text as the value to store, or the reason it cannot be one. */
export function parseValue(type: ValueType, text: string): { ok: true; value: DataValue } | { ok: false; message: string } {
  const t = text.trim();
  switch (type) {
    case 'number': {
      if (t === '' || !Number.isFinite(Number(t))) return { ok: false, message: 'Enter a number' };
      return { ok: true, value: Number(t) };
    }
    case 'boolean': {
      if (t === 'true') return { ok: true, value: true };
      if (t === 'false') return { ok: true, value: false };
      return { ok: false, message: 'Choose true or false' };
    }
    case 'date': {
      if (!ISO_DATE.test(t) || Number.isNaN(Date.parse(t))) return { ok: false, message: 'Enter a date as YYYY-MM-DD' };
      return { ok: true, value: t };
    }
    default:
      if (text === '') return { ok: false, message: 'Enter a value (an empty string is not stored)' };
      return { ok: true, value: text };
  }
}

export interface EditRow {
  key: string;
  type: ValueType;
  text: string;
}

/**
 * The PATCH `data` turning `original` into `rows`: changed and new keys with their typed values,
 * removed keys as null (the API deletes a key given null). Errors name the row (by index) and
 * the problem; a duplicated or empty key is an error.
 */
export function dataPatch(original: Record<string, DataValue>, rows: EditRow[]): { patch: Record<string, DataValue | null>; errors: Record<number, string> } {
  const patch: Record<string, DataValue | null> = {};
  const errors: Record<number, string> = {};
  const seen = new Set<string>();
  rows.forEach((row, index) => {
    const key = row.key.trim();
    if (key === '') {
      errors[index] = 'Enter a key';
      return;
    }
    if (seen.has(key)) {
      errors[index] = `The key "${key}" appears twice`;
      return;
    }
    seen.add(key);
    const parsed = parseValue(row.type, row.text);
    if (!parsed.ok) {
      errors[index] = parsed.message;
      return;
    }
    if (!(key in original) || original[key] !== parsed.value) patch[key] = parsed.value;
  });
  for (const key of Object.keys(original)) if (!seen.has(key)) patch[key] = null;
  return { patch, errors };
}

/** The data columns shown in the table, as kept in the URL (`cols=plan,age`; keys may hold commas, so they are encoded). */
export function decodeColumns(param: string | undefined): string[] {
  if (!param) return [];
  return param
    .split(',')
    .map((c) => {
      try {
        return decodeURIComponent(c);
      } catch {
        return c;
      }
    })
    .filter((c) => c !== '');
}

export function encodeColumns(columns: string[]): string {
  return columns.map((c) => encodeURIComponent(c)).join(',');
}

/** Splits ids into the bulk endpoints' batches (1 to 1,000 ids per request). */
export function chunk<T>(items: T[], size = 1000): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

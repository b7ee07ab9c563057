/**
 * The bytes of a contact export (docs/export.md): CSV per RFC 4180 with spreadsheet formulas
 * neutralised, or NDJSON. Pure functions over the rows the cursor fetches (export.repo.ts).
 */

/** The columns every export starts with, in this order. */
export const STANDARD_COLUMNS = ['email', 'subscribed', 'createdAt'] as const;
const STANDARD_LOWER: ReadonlySet<string> = new Set(STANDARD_COLUMNS.map((c) => c.toLowerCase()));

/** UTF-8 byte order mark: Excel reads a CSV file as UTF-8 only when it starts with one. */
export const UTF8_BOM = '\uFEFF';
const CRLF = '\r\n';

/**
 * Characters a spreadsheet reads as the start of a formula (OWASP "CSV Injection"): `=`, `+`,
 * `-`, `@`, and tab and carriage return, which some spreadsheets skip before reading one.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/** A text cell a spreadsheet would evaluate, made inert by a leading `'` (OWASP); others unchanged. */
export const neutralise = (text: string): string => (FORMULA_START.test(text) ? `'${text}` : text);

/** RFC 4180: a field holding `"`, `,`, CR or LF is enclosed in quotes, its quotes doubled. */
export const csvField = (text: string): string => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

/** A text value as a CSV cell: neutralised, then quoted as needed. */
export const textCell = (text: string): string => csvField(neutralise(text));

/**
 * A data value as PostgreSQL prints `data -> key` (jsonb text), as a CSV cell: a string as is
 * (neutralised), a number or boolean as its text, an object or array as JSON; a missing key or
 * a JSON null is an empty cell. Numbers keep PostgreSQL's exact digits (no float rounding) and
 * are not neutralised: `-5` is a numeric literal, which no spreadsheet evaluates as a formula.
 */
export function dataCell(json: string | null | undefined): string {
  if (json === null || json === undefined || json === 'null') return '';
  if (json.startsWith('"')) return textCell(JSON.parse(json) as string);
  return csvField(json);
}

/**
 * Header names of the data columns, for data keys in column order: the key itself, unless it
 * would read as a standard column (compared case-insensitively, as imports read `email` and
 * `subscribed`) or repeat an earlier name; then `data.` is prefixed until it does not.
 */
export function dataColumnNames(keys: readonly string[]): string[] {
  const used = new Set<string>();
  return keys.map((key) => {
    let name = key;
    while (STANDARD_LOWER.has(name.toLowerCase()) || used.has(name)) name = `data.${name}`;
    used.add(name);
    return name;
  });
}

/** The CSV header row (with the byte order mark when asked for). */
export function csvHeader(keys: readonly string[], bom: boolean): string {
  const names = [...STANDARD_COLUMNS, ...dataColumnNames(keys)];
  return (bom ? UTF8_BOM : '') + names.map(textCell).join(',') + CRLF;
}

/** One contact as a CSV record; `cells` are its data values in column order, as dataCell reads them. */
export function csvRecord(email: string, subscribed: boolean, createdAt: string, cells: readonly (string | null | undefined)[]): string {
  let line = `${textCell(email)},${subscribed ? 'true' : 'false'},${createdAt}`;
  for (const cell of cells) line += `,${dataCell(cell)}`;
  return line + CRLF;
}

/**
 * One contact as an NDJSON line `{email, subscribed, createdAt, data}`; `dataJson` is the
 * contact's data as PostgreSQL prints jsonb (valid JSON, no raw line breaks).
 */
export const ndjsonRecord = (email: string, subscribed: boolean, createdAt: string, dataJson: string): string =>
  `{"email":${JSON.stringify(email)},"subscribed":${subscribed ? 'true' : 'false'},"createdAt":"${createdAt}","data":${dataJson}}\n`;

/**
 * `contacts-<project>-<YYYY-MM-DD>.<ext>`: the project's name as an ASCII slug (its id when
 * nothing of the name is left), so the Content-Disposition value needs no encoding.
 */
export function exportFilename(project: { id: string; name: string }, date: Date, ext: string): string {
  const slug = project.name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return `contacts-${slug || project.id}-${date.toISOString().slice(0, 10)}.${ext}`;
}

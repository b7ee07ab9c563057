import { z } from 'zod';

export const EXPORT_FORMATS = ['csv', 'ndjson'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Content types of the two formats (RFC 4180 `header=present`; NDJSON has no charset parameter: always UTF-8). */
export const EXPORT_CONTENT_TYPES: Readonly<Record<ExportFormat, string>> = {
  csv: 'text/csv; charset=utf-8; header=present',
  ndjson: 'application/x-ndjson',
};

/** A CSV export has at most this many data columns (as GET /contacts/fields lists at most 1,000 keys); NDJSON has none. */
export const MAX_EXPORT_COLUMNS = 1000;

const bool = (description: string) =>
  z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true'))
    .describe(description);

export const ExportQuery = z.object({
  format: z.enum(EXPORT_FORMATS).default('csv').describe('`csv` (default) or `ndjson`'),
  segmentId: z.string().optional().describe("A segment of the project: its members (DYNAMIC: live, as its members page; STATIC: its member list). 404 if the project has none by that id"),
  condition: z
    .string()
    .optional()
    .describe('A condition tree (docs/conditions.md) as JSON, validated as a segment condition (422 naming the filter). With segmentId: contacts matching both'),
  subscribed: bool('`true` or `false`; omitted: both'),
  bom: bool('CSV only: start the file with a UTF-8 byte order mark, so Excel reads it as UTF-8 (default `true`; `false` for tools)'),
});
export type ExportQuery = z.infer<typeof ExportQuery>;

const file = (description: string) => z.string().describe(description);

/** The answer is a file, streamed: one content type per format (documentation; streams bypass serialisation). */
export const ExportResponse = {
  description:
    'The file, streamed (chunked), with `Content-Disposition: attachment; filename="contacts-<project>-<date>.<csv|ndjson>"`. ' +
    'Oldest contact first. A failure after the first byte ends the response without its final chunk.',
  content: {
    'text/csv': {
      schema: file(
        'RFC 4180, CRLF line ends, UTF-8 with a byte order mark unless `bom=false`. Header `email,subscribed,createdAt` then one column per data key of the ' +
          'exported contacts (byte order). Text cells beginning with = + - @, tab or CR are prefixed with \' (spreadsheet formula neutralisation).',
      ),
    },
    'application/x-ndjson': {
      schema: file('One JSON object per line: {"email", "subscribed", "createdAt", "data"}; values as stored, nothing neutralised.'),
    },
  },
};

import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  csvField,
  csvHeader,
  csvRecord,
  dataCell,
  dataColumnNames,
  exportFilename,
  ndjsonRecord,
  neutralise,
} from '../../../src/modules/contacts/export.format.js';

/** How a spreadsheet or csv-parse reads the file back: the cells of each record. */
const readBack = (text: string): string[][] => parse(text, { bom: true, relax_column_count: false, record_delimiter: '\r\n' });

describe('CSV cells (RFC 4180)', () => {
  it('quotes a cell holding a quote, a comma, CR or LF, doubling its quotes; leaves others bare', () => {
    expect(csvField('plain text')).toBe('plain text');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    expect(csvField('cr\rlf')).toBe('"cr\rlf"');
    expect(csvField('')).toBe('');
  });

  it('neutralises a text cell starting with = + - @ tab or CR by a leading apostrophe (OWASP)', () => {
    for (const text of ['=1+2', '+1', '-2+3', '@SUM(A1)', '\tx', '\rx', "=HYPERLINK(\"http://evil\",\"x\")"]) {
      expect(neutralise(text), JSON.stringify(text)).toBe(`'${text}`);
    }
    for (const text of ['1+2', 'a=b', ' =1', "'=1", '', 'x-1', '€=']) expect(neutralise(text), JSON.stringify(text)).toBe(text);
  });

  it('reads data values as PostgreSQL prints jsonb: strings as is (neutralised), numbers exact and not neutralised, objects as JSON', () => {
    expect(dataCell('"pro"')).toBe('pro');
    expect(dataCell('"=cmd|\' /C calc\'!A0"')).toBe("'=cmd|' /C calc'!A0");
    expect(dataCell('"-5"')).toBe("'-5"); // a string that looks like a number is still text
    expect(dataCell('-5')).toBe('-5'); // a JSON number is a numeric literal
    expect(dataCell('12345678901234567890.5')).toBe('12345678901234567890.5');
    expect(dataCell('true')).toBe('true');
    expect(dataCell('{"a": 1, "b": "x"}')).toBe('"{""a"": 1, ""b"": ""x""}"');
    expect(dataCell('[1, 2]')).toBe('"[1, 2]"');
    expect(dataCell(null)).toBe('');
    expect(dataCell('null')).toBe('');
    expect(dataCell('"line\\nbreak, \\"quoted\\""')).toBe('"line\nbreak, ""quoted"""');
  });
});

describe('CSV records', () => {
  it('writes CRLF records that a CSV reader gives back cell for cell', () => {
    const cells = ['"a,b"', '"=1+2"', '"multi\\r\\nline"', '-7', null, '"@x"', '"\\tTab"'];
    const text =
      csvHeader(['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'], true) +
      csvRecord('+ann@example.com', true, '2026-01-02T03:04:05.678Z', cells) +
      csvRecord('bob@example.com', false, '2026-01-02T03:04:05.679Z', [null, null, null, null, null, null, null]);
    expect(text.startsWith('\uFEFFemail,subscribed,createdAt,k1')).toBe(true);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(readBack(text)).toEqual([
      ['email', 'subscribed', 'createdAt', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'],
      ["'+ann@example.com", 'true', '2026-01-02T03:04:05.678Z', 'a,b', "'=1+2", 'multi\r\nline', '-7', '', "'@x", "'\tTab"],
      ['bob@example.com', 'false', '2026-01-02T03:04:05.679Z', '', '', '', '', '', '', ''],
    ]);
  });

  it('leaves the byte order mark out when asked', () => {
    expect(csvHeader([], false)).toBe('email,subscribed,createdAt\r\n');
  });

  it('names a data column after its key, prefixing data. where it would read as a standard column or repeat a name', () => {
    expect(dataColumnNames(['Email', 'age', 'createdAt', 'data.createdAt', 'subscribed', 'zip'])).toEqual([
      'data.Email',
      'age',
      'data.createdAt',
      'data.data.createdAt',
      'data.subscribed',
      'zip',
    ]);
    // Header cells are neutralised like any text.
    expect(csvHeader(['=evil', 'a"b'], false)).toBe('email,subscribed,createdAt,\'=evil,"a""b"\r\n');
  });
});

describe('NDJSON records', () => {
  it('writes one JSON object per line with the data as stored', () => {
    const line = ndjsonRecord('a"b@example.com', true, '2026-01-02T03:04:05.678Z', '{"n": -5, "s": "=1\\n2"}');
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({ email: 'a"b@example.com', subscribed: true, createdAt: '2026-01-02T03:04:05.678Z', data: { n: -5, s: '=1\n2' } });
  });
});

describe('file name', () => {
  it('is contacts-<project slug>-<UTC date>, the id when the name leaves no slug', () => {
    const at = new Date('2026-03-04T23:59:00Z');
    expect(exportFilename({ id: 'p1', name: 'Acme Café "Newsletter"' }, at, 'csv')).toBe('contacts-acme-cafe-newsletter-2026-03-04.csv');
    expect(exportFilename({ id: '0190-id', name: '日本' }, at, 'ndjson')).toBe('contacts-0190-id-2026-03-04.ndjson');
  });
});

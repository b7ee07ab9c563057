import { describe, expect, it } from 'vitest';
import { chunk, dataPatch, decodeColumns, encodeColumns, parseCsvPreview, parseValue, typeOf } from '../../web/src/pages/contacts/logic.js';

describe('contacts page logic: CSV preview', () => {
  it('reads the header and first rows as the import does: BOM, quotes, commas and newlines in quotes, CRLF, trimmed cells, empty lines skipped', () => {
    const csv = '\uFEFFEmail, Plan ,Subscribed\r\n"ada@x.com","pro, yearly",yes\r\n\r\n  bob@x.com ,"two\nlines",\r\n"c""q@x.com",basic,no\n';
    const p = parseCsvPreview(csv);
    expect(p.header).toEqual(['Email', 'Plan', 'Subscribed']);
    expect(p.emailColumn).toBe(0);
    expect(p.subscribedColumn).toBe(2);
    expect(p.rows).toEqual([
      ['ada@x.com', 'pro, yearly', 'yes'],
      ['bob@x.com', 'two\nlines', ''],
      ['c"q@x.com', 'basic', 'no'],
    ]);
    expect(p.truncated).toBe(false);
  });

  it('stops after maxRows and says the file goes on; a last line without newline counts; no email column is -1', () => {
    const lines = ['name,plan', ...Array.from({ length: 9 }, (_, i) => `n${i},p${i}`)].join('\n');
    const p = parseCsvPreview(lines, 3);
    expect(p.rows).toEqual([
      ['n0', 'p0'],
      ['n1', 'p1'],
      ['n2', 'p2'],
    ]);
    expect(p.truncated).toBe(true);
    expect(p.emailColumn).toBe(-1);
    expect(parseCsvPreview('email\na@x.com', 5)).toMatchObject({ rows: [['a@x.com']], truncated: false });
    expect(parseCsvPreview('email\na@x.com\nb@x.com\n', 2).truncated).toBe(false);
    expect(parseCsvPreview('').header).toEqual([]);
  });
});

describe('contacts page logic: typed data values', () => {
  it('types stored values (ISO dates are dates) and parses typed input', () => {
    expect(typeOf(3)).toBe('number');
    expect(typeOf(false)).toBe('boolean');
    expect(typeOf('2026-01-02')).toBe('date');
    expect(typeOf('2026-01-02T10:00:00.000Z')).toBe('date');
    expect(typeOf('2026-13-45')).toBe('string');
    expect(typeOf('00123')).toBe('string');
    expect(parseValue('number', ' 42.5 ')).toEqual({ ok: true, value: 42.5 });
    expect(parseValue('number', 'abc').ok).toBe(false);
    expect(parseValue('number', '').ok).toBe(false);
    expect(parseValue('boolean', 'false')).toEqual({ ok: true, value: false });
    expect(parseValue('date', '2026-02-30x').ok).toBe(false);
    expect(parseValue('date', '2026-02-03')).toEqual({ ok: true, value: '2026-02-03' });
    expect(parseValue('string', '')).toMatchObject({ ok: false });
    expect(parseValue('string', ' keep spaces ')).toEqual({ ok: true, value: ' keep spaces ' });
  });

  it('builds the PATCH data: changed and new keys typed, removed keys null, unchanged keys left out; errors per row', () => {
    const original = { plan: 'pro', age: 30, vip: true };
    const { patch, errors } = dataPatch(original, [
      { key: 'plan', type: 'string', text: 'pro' },
      { key: 'age', type: 'number', text: '31' },
      { key: ' city ', type: 'string', text: 'Paris' },
    ]);
    expect(errors).toEqual({});
    expect(patch).toEqual({ age: 31, city: 'Paris', vip: null });
    // A type change of the same text is a change (the string "30" is not the number 30).
    expect(dataPatch({ age: 30 }, [{ key: 'age', type: 'string', text: '30' }]).patch).toEqual({ age: '30' });
    const bad = dataPatch(original, [
      { key: '', type: 'string', text: 'x' },
      { key: 'age', type: 'number', text: 'old' },
      { key: 'plan', type: 'string', text: 'a' },
      { key: 'plan', type: 'string', text: 'b' },
    ]);
    expect(Object.keys(bad.errors)).toEqual(['0', '1', '3']);
    expect(bad.errors[3]).toMatch(/twice/);
  });
});

describe('contacts page logic: columns in the URL and bulk batches', () => {
  it('round-trips data keys holding commas and spaces', () => {
    const cols = ['plan', 'a,b', 'first name', 'ü'];
    expect(decodeColumns(encodeColumns(cols))).toEqual(cols);
    expect(decodeColumns(undefined)).toEqual([]);
    expect(decodeColumns('plan,,%E0%A4%A')).toEqual(['plan', '%E0%A4%A']);
  });

  it('splits ids into batches of at most 1,000', () => {
    const ids = Array.from({ length: 2345 }, (_, i) => i);
    expect(chunk(ids).map((c) => c.length)).toEqual([1000, 1000, 345]);
    expect(chunk([])).toEqual([]);
  });
});
